"""The "paper list" format: a header line, then one abstract per blank-line-separated paragraph.

Abstracts carry markdown emphasis, LaTeX and inline code URLs. The raw paragraph is what gets
embedded; the display abstract and the derived title have that markup taken out.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator

from recommender.core.papers import Paper, Rejection

TITLE_MAX_CHARS = 100
MIN_ABSTRACT_CHARS = 20
HEADER_MAX_CHARS = 120

_PARAGRAPH = re.compile(r"(?:^[^\S\n]*\S.*(?:\n|\Z))+", re.MULTILINE)
_URL = re.compile(r"https?://[^\s<>\"'`{}\[\]\\]+")
_MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\((https?://[^()\s]+)\)")
_MATH = re.compile(
    r"\$\$(?P<display>.+?)\$\$"
    r"|\$(?P<inline>(?=\S)[^$]+?(?<=\S))\$(?!\d)"
    r"|\\\((?P<paren>.+?)\\\)"
)
_PLACEHOLDER = re.compile("\ue001(\\d+)\ue002")
_ESCAPED_DOLLAR = "\ue000"
# What any of clean_display_text's rewrites needs: text without it is only re-spaced (most
# author names and many titles; the ingest of an arXiv snapshot spent a third of its time here).
_MARKUP = re.compile("[\\\\$*{}\\[~\ue000-\ue002]|--|``|''|://")
_DOUBLE_ESCAPED = re.compile(r"\\\\(?=[A-Za-z%&#_{}$])")  # "\\epsilon", "23\\%" in some data

_BRACED_COMMAND = re.compile(r"\\[A-Za-z]+\*?\s*\{([^{}]*)\}")
_BARE_COMMAND = re.compile(r"\\([A-Za-z]+)\s*")
_ESCAPED_CHAR = re.compile(r"\\([%&#_{}])")
_LATEX_SPACE = re.compile(r"\\[,;:!> ]|\\\\|~")
_ACCENT = re.compile(r"(?:\\?\{)?\\(['`^\"~=.])\{?([A-Za-z])\}?(?:\\?\})?")
_COMBINING = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303",
              "=": "\u0304", ".": "\u0307"}
# Paired markdown emphasis; an unpaired "A* search" is kept. Bold first: ***P**atch ...*.
_BOLD_SPAN = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC_SPAN = re.compile(r"\*(?=\S)(.+?)(?<=\S)\*")
_SYMBOLS = {
    "times": "×", "cdot": "·", "sim": "∼", "approx": "≈", "propto": " ∝ ", "in": " ∈ ",
    "notin": " ∉ ", "le": " ≤ ", "leq": " ≤ ", "ge": " ≥ ", "geq": " ≥ ", "ne": " ≠ ",
    "neq": " ≠ ", "pm": "±", "to": "→", "rightarrow": "→", "mapsto": "↦", "infty": "∞",
    "nabla": "∇", "partial": "∂", "sum": "∑", "prod": "∏", "int": "∫", "lVert": "‖",
    "rVert": "‖", "Vert": "‖", "ldots": "…", "dots": "…", "cdots": "⋯", "forall": "∀",
    "exists": "∃", "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩", "ell": "ℓ",
    "star": "⋆", "circ": "∘", "langle": "⟨", "rangle": "⟩", "top": "⊤", "quad": " ",
    "qquad": " ",
}
_DROPPED = {"mathcal", "mathbf", "mathrm", "mathit", "mathsf", "mathtt", "mathscr", "mathfrak",
            "boldsymbol", "bm", "left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr",
            "Bigl", "Bigr", "displaystyle", "textstyle", "limits", "nolimits", "operatorname"}
_OPERATORS = {"log", "ln", "exp", "sin", "cos", "tan", "max", "min", "arg", "sup", "inf", "lim",
              "det", "Pr", "tr", "dim", "ker"}
_MATHBB = re.compile(r"\\mathbb\s*\{?\s*([A-Za-z])\s*\}?")
_DOUBLE_STRUCK = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "E": "𝔼", "P": "ℙ"}
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_SQRT = re.compile(r"\\sqrt\s*\{([^{}]*)\}")

_BOLD = re.compile(r"\*\*([^*\n]+?)\*\*")
_TEXT_NAME = re.compile(r"\\text(?:bf|tt|sc)\{([^{}]+)\}")
_NAME_LIKE = re.compile(r"[A-Za-z][\w.+-]*(?:\s[\w.+-]+){0,3}")
_ACRONYM_LETTERS = re.compile(r"[A-Za-z]{1,3}")
_MAX_ACRONYM_GAP = 30
_PARENTHESISED = re.compile(r"\*?\s*\(([^()]{2,30})\)")
# "we propose FedScar, a ..." or "we propose Structure-Aware Flow Matching (SA-RFM)" in plain text.
_PLAIN_NAME = re.compile(
    r"\b(?:propose|present|introduce|develop|refer to as|called|termed|named|dubbed)s?\s+"
    r"(?:the\s+)?(?:(?P<name>[A-Z][a-z0-9]*[A-Z][\w-]*),\s+(?:an?|the)\s"
    r"|(?P<expansion>[A-Z][\w-]*(?:\s+[\w-]+){0,6}?)\s*\((?P<acronym>[A-Z][\w-]*[A-Z][\w-]*)\))"
)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|et al|vs|cf|etc|Fig|Eq|Sec|resp)\.$")
# "We propose a X that ...", "We study (the problem of) X": the contribution, as a title.
_CONTRIBUTION = re.compile(
    r"\b[Ww]e\s+(?:(?:first|further|then|also|here|now)\s+)?"
    r"(?:(?P<made>propose|present|introduce|develop)|(?P<study>study))\s+(?P<object>.+)")
_NOVELTY = re.compile(r"^(an?)\s+(?:novel|new)\s+(?:and\s+\w+\s+)?", re.IGNORECASE)
# Where a contribution's phrase may end: before a relative clause, a dash, a comma, a means.
_CLAUSE_BREAK = re.compile(r",\s|\s[–—]\s|\s(?:that|which|where|whose|using|by|through|via|"
                           r"based on)\s")
_EXAMPLES = re.compile(r",?\s+(?:such as|including|e\.g\.)[\s,]")
CONTRIBUTION_MIN_CHARS = 20
CONTRIBUTION_MAX_CHARS = TITLE_MAX_CHARS
_DANGLING_WORDS = {"a", "an", "the", "and", "or", "of", "to", "for", "with", "in", "on", "by",
                   "from", "that", "which", "via", "as", "at", "into", "is", "are", "we", "our"}


def normalise_whitespace(text: str) -> str:
    # str.split() splits at exactly what the regex \s matches (str.isspace), 10 times faster
    return " ".join(text.split())


def content_id(text: str) -> str:
    """The content-derived id of a paper without one: "pl-" + 16 hex chars of sha256(text)."""
    return "pl-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def find_urls(text: str) -> list[str]:
    """Every http(s) URL in ``text``, trailing punctuation stripped, deduplicated in order."""
    urls = (_trim_url(match.group())[0] for match in _URL.finditer(text))
    return list(dict.fromkeys(url for url in urls if not url.endswith("//")))


def _trim_url(url: str) -> tuple[str, str]:
    """Split a matched URL into (url, trailing punctuation that belongs to the sentence)."""
    end = len(url)
    while end and (url[end - 1] in ".,;:!?*" or (
            url[end - 1] == ")" and url.count("(", 0, end) < url.count(")", 0, end))):
        end -= 1
    return url[:end], url[end:]


def _command(match: re.Match[str]) -> str:
    """A bare LaTeX command: a symbol, a Greek letter, an operator name, or its own name."""
    name = match.group(1)
    if name in _DROPPED:
        return ""
    if name in _SYMBOLS:
        return _SYMBOLS[name]
    base = name.removeprefix("var")
    case = "CAPITAL" if base[:1].isupper() else "SMALL"
    try:
        return unicodedata.lookup(f"GREEK {case} LETTER {base.upper().replace('LAMBDA', 'LAMDA')}")
    except KeyError:
        pass
    before = match.string[match.start() - 1: match.start()]
    return f" {name}" if name in _OPERATORS and before.isalnum() else name


def _strip_commands(text: str) -> str:
    """LaTeX commands shared by text and math mode: ``\\cmd{x}`` -> x, bare commands, escapes."""
    text = _FRAC.sub(r"\1/\2", text)
    text = _SQRT.sub(r"√(\1)", text)
    text = re.sub(r"\\href\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"\2 (\1)", text)
    while (stripped := _BRACED_COMMAND.sub(r"\1", text)) != text:
        text = stripped
    text = _BARE_COMMAND.sub(_command, text)
    text = text.replace("\\|", "‖")
    text = re.sub(r"(?<!\\)[{}]", "", text)
    text = _ESCAPED_CHAR.sub(r"\1", text)
    return _LATEX_SPACE.sub(" ", text)


def _clean_math(math: str) -> str:
    math = _MATHBB.sub(lambda m: _DOUBLE_STRUCK.get(m.group(1), m.group(1)), math)
    return _strip_commands(math).strip()


def _clean_text(text: str) -> str:
    text = _ACCENT.sub(
        lambda m: unicodedata.normalize("NFC", m.group(2) + _COMBINING[m.group(1)]), text)
    text = re.sub(r"\{\\(?:em|bf|it|tt|sc|rm|sf)\s+([^{}]*)\}", r"\1", text)
    text = _strip_commands(text)
    text = re.sub(r"(?<!-)---(?!-)", "—", text)
    text = re.sub(r"(?<!-)--(?!-)", "–", text)
    text = text.replace("``", '"').replace("''", '"')
    return _ITALIC_SPAN.sub(r"\1", _BOLD_SPAN.sub(r"\1", text))


def clean_display_text(s: str) -> str:
    """Display form of marked-up text: markdown emphasis and LaTeX removed, URLs kept intact."""
    if not _MARKUP.search(s):
        return normalise_whitespace(s)
    protected: list[str] = []

    def protect(value: str) -> str:
        protected.append(value)
        return f"\ue001{len(protected) - 1}\ue002"

    def protect_url(match: re.Match[str]) -> str:
        url, trailing = _trim_url(match.group())
        return protect(url) + trailing

    def protect_math(match: re.Match[str]) -> str:
        return protect(_clean_math(match.group("display") or match.group("inline")
                                   or match.group("paren")))

    text = _DOUBLE_ESCAPED.sub(r"\\", s)
    text = text.replace("\\$", _ESCAPED_DOLLAR)
    text = _MARKDOWN_LINK.sub(
        lambda m: m[2] if m[1].strip() == m[2] else f"{m[1]} ({m[2]})", text)
    text = _URL.sub(protect_url, text)
    text = _MATH.sub(protect_math, text)
    text = _clean_text(text)
    text = _PLACEHOLDER.sub(lambda m: protected[int(m.group(1))], text)
    return normalise_whitespace(text.replace(_ESCAPED_DOLLAR, "$"))


def _sentences(text: str) -> Iterator[str]:
    start = 0
    for match in _SENTENCE_BREAK.finditer(text):
        if not _ABBREVIATION.search(text[start:match.start()]):
            yield text[start:match.start()]
            start = match.end()
    yield text[start:]


def _shorten(text: str, limit: int = TITLE_MAX_CHARS) -> str:
    """``text`` if it fits, else cut at a word boundary (no dangling "of the") with "…"."""
    text = text.strip().removesuffix(".")
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not text[limit - 1].isspace() and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    words = cut.split()
    while len(words) > 1 and (words[-1].lower() in _DANGLING_WORDS
                              or (words[-1].startswith("(") and ")" not in words[-1])):
        words.pop()
    return " ".join(words).rstrip(",;:–—-(") + "…"


def _normalised_letters(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text).upper()


def _acronym_title(raw: str, names: list[str]) -> str | None:
    """"NAME: Expansion" when bold initials (``**P**atch-level **I**nference``) spell a name."""
    fragments = [m for m in _BOLD.finditer(raw) if _ACRONYM_LETTERS.fullmatch(m[1]) and (
        raw[m.start() - 1: m.start()].isalnum() or raw[m.end(): m.end() + 1].isalnum())]
    groups: list[list[re.Match[str]]] = []
    for fragment in fragments:
        if groups and fragment.start() - groups[-1][-1].end() <= _MAX_ACRONYM_GAP:
            groups[-1].append(fragment)
        else:
            groups.append([fragment])
    for group in (g for g in groups if len(g) >= 2):
        letters = "".join(fragment[1] for fragment in group).upper()
        end = group[-1].end()
        while end < len(raw) and (raw[end].isalnum() or raw[end] in "_-"):
            end += 1
        after = _PARENTHESISED.match(raw, end)
        candidates = ([after[1]] if after else []) + names
        name = next((c for c in candidates if _normalised_letters(c) == letters), None)
        if name:
            phrase = clean_display_text(raw[group[0].start(): end])
            title = f"{clean_display_text(name)}: {phrase}"
            if len(title) <= TITLE_MAX_CHARS:
                return title
    return None


def _descriptive_phrase(display: str, name: str) -> str:
    """What the abstract says ``name`` is, from the sentence introducing it; else sentence one."""
    sentences = list(_sentences(display))
    sentence = next((s for s in sentences if name in s), sentences[0])
    escaped = re.escape(name)
    appositive = re.search(escaped + r",\s+((?:an?|the)\s.+)", sentence)
    if appositive:
        return appositive.group(1)
    termed = re.search(r"\b(?:propose|present|introduce|develop|design)s?\s+(.+?),?\s+"
                       r"(?:termed|called|named|dubbed|coined)\s+" + escaped, sentence)
    return termed.group(1) if termed else sentences[0]


def _contribution_title(display: str) -> str | None:
    """The contribution the abstract states, as a title: "We propose a selective code
    generator that abstains from uncertain generations – based on ..." -> "A selective code
    generator that abstains from uncertain generations"; "We study the problem of training
    X" -> "Training X". None when no sentence says it so plainly."""
    for sentence in _sentences(display):
        found = _CONTRIBUTION.search(sentence)
        if not found:
            continue
        phrase = found["object"].strip().removesuffix(".")
        if found["made"]:
            if not re.match(r"an?\s", phrase):  # "propose to ...", "introduce FooNet, which"
                continue
            phrase = _NOVELTY.sub(r"\1 ", phrase)
        else:
            phrase = re.sub(r"^the (?:problem|question|task) of\s+", "", phrase)
        phrase = _EXAMPLES.split(phrase, maxsplit=1)[0]  # a title names no examples
        if len(phrase) > CONTRIBUTION_MAX_CHARS:
            ends = [m.start() for m in _CLAUSE_BREAK.finditer(phrase)
                    if CONTRIBUTION_MIN_CHARS <= m.start() <= CONTRIBUTION_MAX_CHARS
                    and phrase[:m.start()].split()[-1].lower() not in _DANGLING_WORDS]
            if ends:
                phrase = phrase[:ends[-1]]
        phrase = phrase.strip().rstrip(",;:")
        if len(phrase) >= CONTRIBUTION_MIN_CHARS:
            return _shorten(phrase[:1].upper() + phrase[1:])
        return None
    return None


def derive_title(raw_abstract: str) -> str:
    """A readable title (<= 100 chars) for an abstract that has none.

    Prefers the system the abstract introduces (in bold, ``\\texttt``, or plain "we propose
    X, a ..." / "Expansion (ACRONYM)") with its spelled-out expansion ("PIAA: Patch-level
    Inference followed by Adaptive Aggregation") or what it is said to be ("FedRGL: A robust
    federated graph learning method with label noise"); else the contribution it states ("We
    propose a X that ..." -> "A X that ...", ``_contribution_title``); otherwise the first
    sentence, shortened at a word boundary.
    """
    names = [m.group(1).strip() for m in _BOLD.finditer(raw_abstract)]
    names += _TEXT_NAME.findall(raw_abstract)
    names = [n for n in names if _NAME_LIKE.fullmatch(n) and len(n) <= 40
             and any(c.isupper() for c in n) and not _ACRONYM_LETTERS.fullmatch(n)]
    acronym = _acronym_title(raw_abstract, names)
    if acronym:
        return acronym
    display = clean_display_text(raw_abstract)
    plain = _PLAIN_NAME.search(display)
    if not names and plain and plain["name"]:
        names = [plain["name"]]
    if names:
        name = clean_display_text(names[0])
        phrase = _descriptive_phrase(display, name)
        return _shorten(f"{name}: {phrase[:1].upper()}{phrase[1:]}")
    if plain and plain["acronym"] and plain["expansion"][0] == plain["acronym"][0]:
        return _shorten(f"{plain['acronym']}: {plain['expansion']}")
    return _contribution_title(display) or _shorten(next(_sentences(display)))


def _is_header(paragraph: str) -> bool:
    """A lone short line with no sentence break in it, e.g. "ICML 2026 论文列表"."""
    line = paragraph.strip()
    return "\n" not in line and len(line) < HEADER_MAX_CHARS and not re.search(r"[.!?]\s+\S", line)


def parse_paper_list(text: str, source: str) -> Iterator[Paper | Rejection]:
    """Papers (or rejections) from paper-list text; ``source`` names the file in rejections."""
    line, position = 1, 0
    for index, match in enumerate(_PARAGRAPH.finditer(text)):
        line += text.count("\n", position, match.start())
        position = match.start()
        if index == 0 and _is_header(match.group()):
            continue
        raw = normalise_whitespace(match.group())
        display = clean_display_text(raw)
        if len(display) < MIN_ABSTRACT_CHARS:
            reason = f"paragraph too short to be an abstract ({len(display)} characters)"
            yield Rejection(source, line, reason)
            continue
        yield Paper(id=content_id(raw), title=derive_title(raw), abstract=display,
                    code_urls=find_urls(raw), text=raw)

"""BibTeX field values as plain text, at a cost bounded per file.

pylatexenc decodes LaTeX (``{\\"u}`` is ü, ``$x$`` is x, braces go) at 5 to 20 µs a
character, whatever the character: a 2,000-character abstract with one ``$O(n)$`` in it took
8 ms, a 1 MB file of accents 10 s, and a real 10 MB export 30 s. Two things bound that:

- Only what needs it is decoded. A value is cut into pieces at the spaces between its words
  (never inside braces, brackets or math, nor after a macro or its argument, which may take
  the next word as its own); a piece LaTeX would not change is kept as it is; one whose only
  markup is braces, ``~``, escaped characters (``\\%``), accents on a letter (``\\'{e}``,
  ``\\v{s}``, ``\\~{\\^e}``) or the letters of names (``{\\o}``, ``\\ss{}``) is read here;
  only the rest (math, other macros) goes to pylatexenc, piece by piece. The text is the one
  pylatexenc gives for the whole value (tests/test_security_parse.py compares them), but for
  a space more or less where a macro takes math as its argument, which no export writes; a
  value the cutting does not model (a ``%`` comment, an environment, ``\\verb``, display
  math, unbalanced braces) is decoded whole. A real 10 MB export went from 30 s to 6.
- A ``Budget`` per file: the characters handed to pylatexenc (``MAX_DECODED``, 1,000,000:
  10 to 20 s of the costliest markup; the real 10 MB export, its abstracts full of math,
  needed 290,000) and the characters read from the entries' fields, @string macros expanded
  (``MAX_READ``, 12,000,000: a 10 MB file's own text and a fifth more; a 10-character
  reference to a 150,000-character macro, 20,000 times over, would be 3 GB). Past either,
  ``BudgetSpent`` says which, and the file's entries from there on are not read.
"""

from __future__ import annotations

import logging
import re
import unicodedata

from pylatexenc.latex2text import LatexNodes2Text
from pylatexenc.latexwalker import get_default_latex_context_db

MAX_DECODED = 1_000_000
MAX_READ = 12_000_000
# What makes LaTeX of a value at all (a value without any is plain text already).
_MARKUP = re.compile(r"[\\{}$%~]")
# What pylatexenc changes in a piece: markup, and its text specials (-- is a dash, `` and ''
# quotes, & an alignment tab, !` and ?` inverted marks).
_CHANGED = re.compile(r"[\\{}$%~&]|--|``|''|[!?]`")
_SPECIALS = re.compile(r"--|``|''|[!?]`")
# A piece whose only markup is braces, ~ and escaped characters (\% \& \_ \# \$ \{ \}),
# as exports write titles, names and percentages: read without pylatexenc (70 µs a call).
_SIMPLE = re.compile(r"(?:[^\\$%&]|\\[%&_#${}])*")
_SIMPLE_MARKUP = re.compile(r"\\([%&_#${}])|[{}~]")
_UNBRACED = str.maketrans({"{": None, "}": None, "~": " "})  # the same, without escapes
# Accents on one letter (\'e, \'{e}, \"{\i}, \v{s}, \~{\^e}) and the letters of names ({\o}, \ss{}),
# as pylatexenc writes them (the letter and a combining accent, composed): names are
# full of them, and pylatexenc takes 150 µs a name.
_COMBINING = {"'": "\u0301", "`": "\u0300", '"': "\u0308", "^": "\u0302", "~": "\u0303",
              "=": "\u0304", ".": "\u0307", "c": "\u0327", "H": "\u030b", "k": "\u0328",
              "b": "\u0331", "d": "\u0323", "r": "\u030a", "u": "\u0306", "v": "\u030c"}
_ACCENT = re.compile(r"""\\(['`"^~=.]|[cHkbdruv](?=\{))(?:\{(\\[ij]|[^\W\d_])\}|([A-Za-z]))""")
_ACCENT_BRACED = re.compile(r"""\\(['`"^~=.]|[cHkbdruv])\{(\\[ij]|[^\W\d_])\}""")
_LETTER_NAMES = ("ss", "ae", "AE", "oe", "OE", "aa", "AA", "o", "O", "l", "L", "i", "j")
_LETTER = re.compile(r"\\(" + "|".join(_LETTER_NAMES) + r")(?:\{\}|(?=\}))")
# What the cutting into pieces does not model: the value is decoded whole.
_WHOLE = re.compile(r"(?<!\\)%|\\(?:begin|end|verb)\b|\\[(\[\\]|\$\$")
# The words of a value, its macros, its spaces and the characters that group (for _pieces).
_TOKEN = re.compile(r"\\(?:[A-Za-z]+|.?)|{+|}+|[\[\]$]|\s+|[^\\{}\[\]$\s]+", re.S)
_LATEX = LatexNodes2Text()
_CONTEXT = get_default_latex_context_db()  # made once: pylatexenc makes it for every call
_LETTERS = {name: _LATEX.latex_to_text(f"\\{name}{{}}") for name in _LETTER_NAMES}


class BudgetSpent(Exception):
    """The file's entries from here on cost more than one file may; ``reason`` says which
    limit, in words for the reader."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Budget:
    """What is left of one file's allowance: characters to decode and characters to read."""

    def __init__(self, decoded: int = MAX_DECODED, read: int = MAX_READ) -> None:
        self.limits = (decoded, read)
        self.decoded = decoded
        self.read = read
        self.spent: str | None = None  # once spent, stays spent: the rest is not read

    def take_read(self, characters: int) -> None:
        self.read -= characters
        if self.read < 0:
            self._spend(f"the file's entries hold more than {self.limits[1]:,} characters of "
                        "text (titles, abstracts, names, with their @string macros expanded)")

    def take_decoded(self, characters: int) -> None:
        self.decoded -= characters
        if self.decoded < 0:
            self._spend(f"the file holds more than {self.limits[0]:,} characters of LaTeX "
                        "markup to decode")

    def check(self) -> None:
        if self.spent:
            raise BudgetSpent(self.spent)

    def _spend(self, why: str) -> None:
        self.spent = (f"not read: {why}, more than one import reads; import the entries "
                      "from here on as another file")
        raise BudgetSpent(self.spent)


def plain_text(value: str, budget: Budget) -> str:
    """``value`` as plain text on one line: LaTeX decoded, braces removed, spaces collapsed.
    BudgetSpent when decoding it would pass the budget."""
    if not _MARKUP.search(value):
        return " ".join(value.split())
    pieces = None if _WHOLE.search(value) else _pieces(value)
    if pieces is None:
        return _decoded(value, budget)
    return " ".join(" ".join(_piece(p, budget) for p in pieces).split())


def _piece(piece: str, budget: Budget) -> str:
    if not _CHANGED.search(piece):
        return piece
    simple = piece
    if "\\" in piece:  # twice: a letter may have two accents, as Nguy{\~{\^e}}n
        simple = _ACCENT_BRACED.sub(_accented, _ACCENT.sub(_accented, piece))
        simple = _LETTER.sub(_letter, simple)
    if _SIMPLE.fullmatch(simple):
        simple = (_SIMPLE_MARKUP.sub(_unescaped, simple) if "\\" in simple
                  else simple.translate(_UNBRACED))
        if not _SPECIALS.search(simple):
            return simple
    return _decoded(piece, budget)


def _accented(accent: re.Match[str]) -> str:
    mark, *letters = accent.groups()
    letter = next(found for found in letters if found)
    return unicodedata.normalize("NFC", letter.lstrip("\\") + _COMBINING[mark])


def _letter(name: re.Match[str]) -> str:
    return _LETTERS[name.group(1)]


def _unescaped(markup: re.Match[str]) -> str:
    return markup.group(1) or (" " if markup.group(0) == "~" else "")


def _decoded(text: str, budget: Budget) -> str:
    budget.take_decoded(len(text))
    try:
        return " ".join(_LATEX.latex_to_text(text, latex_context=_CONTEXT).split())
    except Exception:  # pylatexenc is lenient; never lose an entry over its markup
        return " ".join(text.replace("{", "").replace("}", "").split())


def _pieces(value: str) -> list[str] | None:
    """``value`` cut at the spaces between its words, or None when its braces or math are
    unbalanced. A space is a cut unless it is inside braces, brackets or math, or follows a
    macro or an argument of one (``\\emph {x}``, ``\\' e``, ``\\cite [p. 3] {key}``)."""
    pieces: list[str] = []
    start = depth = brackets = 0
    math = glued = carried = False  # glued: the next word may be a macro's argument
    for token in _TOKEN.finditer(value):
        char = token.group()[0]
        top = not (depth or brackets or math)
        if char == "\\":
            glued = True
            continue
        if char.isspace():
            if top and not glued:
                pieces.append(value[start:token.start()])
                start = token.end()
            continue
        if top:  # a group opened after a macro is its argument: what follows it may be too
            carried, glued = glued, False
        if char == "{":
            depth += token.end() - token.start()
        elif char == "}":
            depth -= token.end() - token.start()
            if depth < 0:
                return None
        elif char == "[":
            brackets += 1
        elif char == "]":
            brackets = max(0, brackets - 1)
        elif char == "$":
            math = not math
        if not top and not (depth or brackets or math):
            glued = carried
    if depth or math:
        return None
    pieces.append(value[start:])
    return [p for p in pieces if p]


# A hostile file's markup would otherwise log a warning per macro pylatexenc cannot render.
logging.getLogger("pylatexenc").setLevel(logging.ERROR)

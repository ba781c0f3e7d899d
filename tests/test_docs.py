"""The README and the documentation site (docs/) say only what is true: every `paperrec`
command they show parses with the command's own parser, every `make` target exists, every
repository path they name exists, every `curl` asks for a route the app has, and the pages
made from the code at build time (docs/gen_pages.py) cover what they are made from.

`make docs` (mkdocs build --strict) checks the links between pages; this checks what a build
cannot see.
"""

from __future__ import annotations

import fnmatch
import glob
import importlib.util
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from flask import Flask
from werkzeug.exceptions import HTTPException

from service.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.S | re.M)
# Blocks whose lines are data, not commands a reader types.
DATA_BLOCKS = {"json", "yaml", "python", "html", "mermaid", "css", "toml"}
SHELL_OPERATORS = {";", "&", "&&", "|", "||", "(", ")", "<", ">", ">>", ">&", "<<", "<<<"}
IGNORED = [line.strip().rstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines()
           if line.strip() and not line.startswith("#")]
# The repository's own top-level entries (not var/, site/, .venv/ or other ignored ones).
TOP_LEVEL = {path.name for path in ROOT.iterdir() if path.name != ".git"
             and not any(fnmatch.fnmatch(path.name, pattern) for pattern in IGNORED)}
ASSIGNMENT = re.compile(r"^(?:export )?((?:[A-Za-z_]\w*=\S*\s*)+?)(?:#.*)?$")


def load_gen_pages() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_pages", ROOT / "docs" / "gen_pages.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table(text: str, first_column: str) -> list[list[str]]:
    """The rows of the markdown table whose header starts with `first_column`."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_column:
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            assert rows, f"the table with a {first_column!r} column has no rows"
            return rows
    raise AssertionError(f"no table with a {first_column!r} column")


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def where(page: Path) -> str:
    return str(page.relative_to(ROOT))


def fenced_blocks(page: Path) -> Iterator[tuple[str, str]]:
    for match in FENCE.finditer(page.read_text()):
        yield match.group(1), match.group(2)


def command_lines(page: Path) -> Iterator[str]:
    """The lines a reader would type: after `$ ` in console blocks (with their `\\`
    continuations), every line of other shell-like blocks (cron, ini, sh, untyped)."""
    for language, block in fenced_blocks(page):
        if language in DATA_BLOCKS:
            continue
        typed = language == "console"
        pending = ""
        variables: dict[str, str] = {}  # set by the block's own `export A=... B=...` lines
        for line in block.splitlines():
            if pending:
                line, pending = pending + " " + line.strip(), ""
            elif typed:
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if line.endswith("\\"):
                pending = line[:-1]
                continue
            assigned = ASSIGNMENT.match(line.strip())
            if assigned:
                for item in assigned.group(1).split():
                    name, _, value = item.partition("=")
                    variables[name] = value
            elif line.strip() and not line.lstrip().startswith("#"):
                yield expand(line, variables)


def expand(line: str, variables: dict[str, str]) -> str:
    """$NAME, ${NAME} and ${NAME%suffix} of the variables a block set; others stay."""
    line = re.sub(r"\$\{(\w+)%([^}]*)\}",
                  lambda m: variables[m[1]].removesuffix(m[2]) if m[1] in variables else m[0],
                  line)
    return re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m[1], m[0]), line)


def inline_code(page: Path) -> list[str]:
    """The `code spans` of a page's text, outside its fenced blocks."""
    text = FENCE.sub("", page.read_text())
    return re.findall(r"`([^`\n]+)`", text)


def paperrec_invocations(line: str) -> Iterator[list[str]]:
    """The arguments of every `paperrec` (or `.../bin/paperrec`) in a shell line."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    for i, token in enumerate(tokens):
        if not (token == "paperrec" or token.endswith("/bin/paperrec")):  # also ExecStart=
            continue
        args: list[str] = []
        for arg in tokens[i + 1:]:
            if arg in SHELL_OPERATORS or set(arg) <= set(";&|<>()"):
                if args and args[-1].isdigit():  # 2>&1: the 2 is the redirection's
                    args.pop()
                break
            args.append(arg)
        yield args


def test_the_pages_show_commands() -> None:
    found = [args for page in PAGES for line in command_lines(page)
             for args in paperrec_invocations(line)]
    assert len(found) > 40, "the commands were not found in the pages"


@pytest.mark.parametrize("page", PAGES, ids=where)
def test_every_paperrec_command_parses(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    for line in command_lines(page):
        for args in paperrec_invocations(line):
            if {"-h", "--help"} & set(args):
                continue
            try:
                parser.parse_args(args)
            except SystemExit:
                pytest.fail(f"{where(page)}: `paperrec {shlex.join(args)}` does not parse: "
                            f"{capsys.readouterr().err.strip().splitlines()[-1]}")


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z0-9][\w.-]*)\s*:(?!=)", text, re.M))


@pytest.mark.parametrize("page", PAGES, ids=where)
def test_every_make_target_exists(page: Path) -> None:
    code = list(command_lines(page)) + inline_code(page)
    named = {target for text in code for target in re.findall(r"\bmake ([a-z][\w-]*)", text)}
    missing = named - make_targets()
    assert not missing, f"{where(page)} names make targets the Makefile lacks: {missing}"


def repository_path(span: str) -> bool:
    """A code span naming a file or folder of this repository: its first part is one of
    the repository's top-level entries, or it is a Python or markdown file."""
    if " " in span or "://" in span or span.startswith(("/", "~", "$", "<", ".venv")):
        return False
    return span.split("/", 1)[0] in TOP_LEVEL or span.endswith((".py", ".md"))


def markdown_files_named(page: Path) -> list[str]:
    """Markdown files named in the text (`DESIGN.md`, README.md), but for link targets,
    which are relative to the page (mkdocs checks those of docs/, the test below README's)."""
    text = re.sub(r"\]\([^)]*\)", "]", FENCE.sub("", page.read_text()))
    return re.findall(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.md)\b", text)


@pytest.mark.parametrize("page", PAGES, ids=where)
def test_every_repository_path_exists(page: Path) -> None:
    named = [span for span in inline_code(page) if repository_path(span)]
    named += markdown_files_named(page)
    if page.name == "README.md":  # its links and images are paths too (docs/ has mkdocs)
        named += [target for target in re.findall(r"\]\(([^)#\s]+)", page.read_text())
                  if "://" not in target]
    missing = [path for path in named
               if not glob.glob(str(ROOT / path.split("::")[0].rstrip("/")))]
    assert not missing, f"{where(page)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=where)
def test_every_test_named_exists(page: Path) -> None:
    """`tests/test_x.py::test_name` in a page (docs/security.md lists the attacks so) is a
    test of that file."""
    named = [span.split("::") for span in inline_code(page) if "::" in span]
    missing = [f"{file}::{test}" for file, test in named
               if not re.search(rf"^def {re.escape(test)}\(", (ROOT / file).read_text(), re.M)]
    assert not missing, f"{where(page)} names tests that do not exist: {missing}"


def curl_requests(line: str) -> Iterator[tuple[str, str]]:
    """(method, path) of each `curl` of this service in a shell line."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    for i, token in enumerate(tokens):
        if token != "curl":
            continue
        args = []
        for arg in tokens[i + 1:]:
            if arg in SHELL_OPERATORS:
                break
            args.append(arg)
        method = args[args.index("-X") + 1] if "-X" in args else (
            "POST" if {"-d", "--data-binary", "-F"} & set(args) else "GET")
        for arg in args:
            found = re.match(r"(?:https?://)?(?:localhost|127\.0\.0\.1):8000(/[^?\s]*)?", arg)
            if found:
                yield method, found.group(1) or "/"


def test_every_curl_asks_for_a_route_the_app_has(app: Flask) -> None:
    adapter = app.url_map.bind("localhost")
    asked = [(page, method, path) for page in PAGES for line in command_lines(page)
             for method, path in curl_requests(line)]
    assert len(asked) > 30, "the curl commands were not found in the pages"
    wrong = []
    for page, method, path in asked:
        try:
            adapter.match(path, method=method)
        except HTTPException as exc:  # 404, or 405 for a method the route does not take
            wrong.append(f"{where(page)}: {method} {path} ({exc.code})")
    assert not wrong, "\n".join(wrong)


# --- the pages made from the code --------------------------------------------------------

def test_the_layer_diagram_has_every_layer_of_the_contract() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in contracts["contracts"] if c["type"] == "layers")["layers"]
    diagram = load_gen_pages().layer_diagram()
    for layer in layers:
        for package in layer.split("|"):
            assert f"recommender/{package.strip()}" in diagram
    assert diagram.count("-->") == len(layers)  # service, then each layer, one chain


def test_the_rest_reference_shows_every_operation(app: Flask) -> None:
    document = app.test_client().get("/openapi.json").get_json()
    reference = load_gen_pages().rest_reference(document)
    reference = re.sub(r'<span class="route-param">(.*?)</span>', r"\1", reference)
    for path, operations in document["paths"].items():
        for method in operations:
            assert f'<span class="http-{method}">{method.upper()}</span> {path}' in reference
    assert not reference.lstrip().startswith("# "), "the page has its own title"

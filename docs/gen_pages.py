"""The pages of the documentation site that are made from the code, at build time.

mkdocs-gen-files runs this file during `mkdocs build` (mkdocs.yml): it appends to the
hand-written pages what would drift if it were written by hand:

- configuration.md: every setting, its variable, default and meaning, from the declarations
  in recommender/core/config.py (the same source as `paperrec --help`);
- api/reference.md: the REST reference, rendered by essentials-openapi from the document the
  app serves at /openapi.json (asked of the app over HTTP through Flask's test client, so it
  is whatever the API layer declares), and that document itself as api/openapi.json;
- architecture.md: the layer diagram, from the import-linter contract in pyproject.toml;
- assets/mermaid.min.js: the pinned mermaid the Makefile fetched, so diagrams draw offline.

Tests import the functions (tests/test_docs.py); only a build runs `main()`.
"""

from __future__ import annotations

import copy
import html
import json
import logging
import os
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LAYERS_MARKER = "<!-- layers: generated from pyproject.toml -->"
# The Makefile's pinned copy (it passes the path; a plain `mkdocs build` finds the copy an
# earlier `make docs` left in the venv).
MERMAID_JS = os.environ.get("PAPERREC_DOCS_MERMAID") or next(
    (str(path) for path in sorted(Path(".venv").glob("mermaid-*.min.js"))), "")
# Any key of at least 16 characters: the document then declares the bearer scheme, as a
# deployment with keys serves it.
DOCUMENTED_KEY = "client:" + "k" * 16


def configuration_table() -> str:
    """A markdown table of every variable: the settings' declarations, then those only the
    `paperrec` command reads."""
    from recommender.core.config import Settings
    from service.cli.operations import COMMAND_VARIABLES

    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        rows.append(_row(Settings.variable(name), _default(field.default),
                         field.description or ""))
    for variable, meaning, default in COMMAND_VARIABLES:
        rows.append(_row(variable, _default(default), meaning))
    return "\n".join(rows) + "\n"


def _default(value: Any) -> str:
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    return f"`{shown}`" if shown else "*(empty)*"


def _row(variable: str, default: str, meaning: str) -> str:
    return f"| `{variable}` | {default} | {html.escape(meaning).replace('|', '&#124;')} |"


def openapi_document() -> dict[str, Any]:
    """GET /openapi.json of an app over an empty data dir. Its Redis URL points at a port
    nothing listens on: making the document needs no Redis (an attempt would fail the build)."""
    from recommender.core.config import Settings
    from service.app import create_app

    with tempfile.TemporaryDirectory(prefix="paperrec-docs-") as data_dir:
        settings = Settings(data_dir=Path(data_dir), api_keys=DOCUMENTED_KEY,
                            redis_url="redis://127.0.0.1:1/0")
        logging.disable(logging.WARNING)  # "no index version has been published yet"
        try:
            response = create_app(settings).test_client().get("/openapi.json")
        finally:
            logging.disable(logging.NOTSET)
    if response.status_code != 200:
        raise RuntimeError(f"GET /openapi.json answered {response.status_code}")
    document: dict[str, Any] = response.get_json()
    return document


def rest_reference(document: dict[str, Any]) -> str:
    """The document as markdown (essentials-openapi, the renderer of neoteroi-mkdocs' OAD
    plugin, for Material and pymdownx), under this page's own title: its first heading is
    the API's title, which the page already has."""
    from openapidocs.mk.v3 import OpenAPIV3DocumentationHandler

    shown = copy.deepcopy(document)
    for scheme in ((shown.get("components") or {}).get("securitySchemes") or {}).values():
        if scheme.get("scheme") == "bearer":  # undescribed, the renderer says "JWT"
            scheme.setdefault("description", "an API key, sent as Authorization: Bearer KEY")
    text = OpenAPIV3DocumentationHandler(shown, style="MKDOCS").write()
    lines = text.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("# "))
    return "\n".join(lines[:title] + lines[title + 1:]) + "\n"


def layer_diagram(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """A mermaid flowchart of the layers contract: the service on top, then each layer of
    `recommender`, siblings (`a | b`) in one box; an arrow reads "may import"."""
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    container = next(c for c in contracts if c["type"] == "layers")["containers"][0]
    lines = ["```mermaid", "flowchart TD",
             '  service["service/<br>the Flask app, its pages, the paperrec command"]']
    for number, layer in enumerate(layers):
        names = [f"{container}/{name.strip()}" for name in layer.split("|")]
        lines.append(f'  L{number}["{" · ".join(names)}"]')
    lines.append("  " + " --> ".join(["service", *(f"L{n}" for n in range(len(layers)))]))
    lines.append("```")
    return "\n".join(lines) + "\n"


def main() -> None:
    import mkdocs_gen_files

    with mkdocs_gen_files.open("configuration.md", "a") as page:
        page.write("\n" + configuration_table())

    document = openapi_document()
    with mkdocs_gen_files.open("api/openapi.json", "w") as page:
        json.dump(document, page, indent=2, ensure_ascii=False)
    with mkdocs_gen_files.open("api/reference.md", "a") as page:
        page.write("\n" + rest_reference(document))

    with mkdocs_gen_files.open("architecture.md", "r") as page:
        architecture = page.read()
    if LAYERS_MARKER not in architecture:
        raise SystemExit(f"architecture.md lost its marker {LAYERS_MARKER!r}")
    with mkdocs_gen_files.open("architecture.md", "w") as page:
        page.write(architecture.replace(LAYERS_MARKER, layer_diagram()))

    if not MERMAID_JS or not Path(MERMAID_JS).is_file():
        raise SystemExit("no mermaid.min.js at $PAPERREC_DOCS_MERMAID: build with `make docs`, "
                         "which fetches a pinned copy from the npm registry first")
    with mkdocs_gen_files.open("assets/mermaid.min.js", "wb") as page:
        page.write(Path(MERMAID_JS).read_bytes())


if __name__ in ("__main__", "<run_path>"):  # mkdocs-gen-files runs it with runpy
    main()

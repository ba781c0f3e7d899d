"""A local OAI-PMH 2.0 endpoint that replays arXiv records in arXiv's documented format.

``OaiReplay`` serves ``ListRecords`` over a list of ``Record`` (kept in datestamp order, as a
repository's), ``page_size`` a page, joined by resumption tokens, selecting by ``set`` (a
record's setSpecs, or a category set ``cs:cs:LG`` matching its categories) and ``from``
(datestamp on or after). Like every ``ReplayServer`` it remembers each request's query
(``requests``) and fails on purpose (``faults``, ``fail_from``). Used by
tests/test_fetch_arxiv.py and the harvest and intake benchmarks; ``python -m replay.oai_pmh``
serves replay/demo-records.jsonl for the docs' walk-through.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from replay.server import ReplayServer

DEMO_RECORDS = Path(__file__).with_name("demo-records.jsonl")

HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n'
        '<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ '
        'http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">\n'
        '<responseDate>2026-12-01T00:00:00Z</responseDate>\n')


@dataclass
class Record:
    """One arXiv record; ``title=None`` leaves the title out (a malformed record)."""

    arxiv_id: str
    datestamp: str
    title: str | None = "A title"
    abstract: str = "An abstract."
    created: str = "2026-11-02"
    categories: str = "cs.LG"
    authors: list[tuple[str, str]] = field(default_factory=lambda: [("Lovelace", "Ada")])
    comments: str = ""
    deleted: bool = False

    @property
    def set_specs(self) -> list[str]:
        return sorted({category.split(".")[0] for category in self.categories.split()})

    def xml(self) -> str:
        sets = "".join(f"<setSpec>{spec}</setSpec>" for spec in self.set_specs)
        status = ' status="deleted"' if self.deleted else ""
        header = (f"<header{status}><identifier>oai:arXiv.org:{self.arxiv_id}</identifier>"
                  f"<datestamp>{self.datestamp}</datestamp>{sets}</header>")
        if self.deleted:
            return f"<record>{header}</record>\n"
        authors = "".join(f"<author><keyname>{escape(key)}</keyname>"
                          f"<forenames>{escape(fore)}</forenames></author>"
                          for key, fore in self.authors)
        title = f"<title>{escape(self.title)}</title>" if self.title is not None else ""
        comments = f"<comments>{escape(self.comments)}</comments>" if self.comments else ""
        return (f"<record>{header}<metadata>"
                f'<arXiv xmlns="http://arxiv.org/OAI/arXiv/" '
                f'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
                f'xsi:schemaLocation="http://arxiv.org/OAI/arXiv/ '
                f'http://arxiv.org/OAI/arXiv.xsd">'
                f"<id>{self.arxiv_id}</id><created>{self.created}</created>"
                f"<updated>{self.datestamp}</updated><authors>{authors}</authors>{title}"
                f"<categories>{self.categories}</categories>{comments}"
                f"<license>http://arxiv.org/licenses/nonexclusive-distrib/1.0/</license>"
                f"<abstract>  {escape(self.abstract)}\n</abstract></arXiv>"
                f"</metadata></record>\n")

    def in_set(self, set_spec: str) -> bool:
        parts = set_spec.split(":")
        if len(parts) == 3:  # group:archive:subject, e.g. cs:cs:LG
            return f"{parts[1]}.{parts[2]}" in self.categories.split()
        return parts[-1] in self.set_specs


class OaiReplay(ReplayServer):
    def __init__(self, records: list[Record], page_size: int = 3, port: int = 0) -> None:
        super().__init__("/oai", port)
        self.records = records
        self.page_size = page_size

    def content_type(self, status: int) -> str:
        return "text/xml; charset=utf-8" if status == 200 else "text/plain"

    def respond(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        status, headers, body = self.list_records(query)
        return status, headers, body.encode()

    def list_records(self, query: dict[str, str]) -> tuple[int, dict[str, str], str]:
        if query.get("verb") != "ListRecords":
            return 200, {}, self._error("badVerb", "only ListRecords is replayed")
        if "resumptionToken" in query:
            try:
                set_spec, from_date, offset = query["resumptionToken"].split("|")
                start = int(offset)
            except ValueError:
                return 200, {}, self._error("badResumptionToken", "not a token of ours")
        elif query.get("metadataPrefix") != "arXiv":
            return 200, {}, self._error("cannotDisseminateFormat", "metadataPrefix arXiv only")
        else:
            set_spec, from_date, start = query.get("set", ""), query.get("from", ""), 0
        chosen = sorted((r for r in self.records
                         if (not set_spec or r.in_set(set_spec)) and r.datestamp >= from_date),
                        key=lambda r: r.datestamp)
        if not chosen:
            return 200, {}, self._error("noRecordsMatch", "no records match")
        page = chosen[start:start + self.page_size]
        end = start + len(page)
        token = (f'<resumptionToken cursor="{start}" completeListSize="{len(chosen)}">'
                 f"{set_spec}|{from_date}|{end}</resumptionToken>" if end < len(chosen) else
                 f'<resumptionToken cursor="{start}" completeListSize="{len(chosen)}"/>')
        body = "".join(record.xml() for record in page)
        return 200, {}, (f'{HEAD}<request verb="ListRecords">{self.url}</request>\n'
                         f"<ListRecords>\n{body}{token}\n</ListRecords>\n</OAI-PMH>\n")

    def _error(self, code: str, message: str) -> str:
        return (f'{HEAD}<request verb="ListRecords">{self.url}</request>\n'
                f'<error code="{code}">{message}</error>\n</OAI-PMH>\n')


def records_from_jsonl(path: Path) -> list[Record]:
    """Records written one JSON object a line: ``arxiv_id``, ``datestamp``, ``title``,
    ``abstract``, ``categories``, ``authors`` ("Last, First" strings), optional ``created``."""
    records = []
    for line in path.read_text().splitlines():
        if line.strip():
            item = json.loads(line)
            records.append(Record(
                item["arxiv_id"], item["datestamp"], item["title"], item["abstract"],
                created=item.get("created", item["datestamp"]), categories=item["categories"],
                authors=[tuple(name.split(", ", 1)) for name in item["authors"]]))
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Serve arXiv records over OAI-PMH (ListRecords, metadata format arXiv) on "
                    "127.0.0.1, as the tests do, to try `paperrec fetch arxiv` without arXiv.")
    parser.add_argument("records", type=Path, nargs="?", default=DEMO_RECORDS,
                        help="JSON lines of records (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--page-size", type=int, default=3)
    args = parser.parse_args(argv)
    replay = OaiReplay(records_from_jsonl(args.records), args.page_size, port=args.port)
    print(f"replaying {len(replay.records)} records at {replay.url} (Ctrl-C stops)", flush=True)
    with replay, contextlib.suppress(KeyboardInterrupt):
        replay.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

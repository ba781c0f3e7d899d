"""The `paperrec` command: batch jobs and the server, one subcommand each, `--help` on all."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from recommender import jobs
from recommender.config import Settings
from recommender.errors import PaperrecError

ENVIRONMENT_HELP = """environment:
  PAPERREC_DATA_DIR   where the corpus, embeddings, index and embedded Redis live (./var)
  REDIS_URL           an external Redis (default: the embedded server in the data dir)
  PAPERREC_MODEL      sentence-transformers model path (default: bundled all-MiniLM-L6-v2)
"""


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a model hub
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        return int(args.run(args, Settings.from_env()))
    except PaperrecError as exc:
        print(f"paperrec {args.command}: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paperrec",
        description="Personalized research-paper recommendations.",
        epilog=ENVIRONMENT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = sub.add_parser(
        "ingest", help="add or update papers from files",
        description="Read papers into the corpus. Formats: the paper-list text format (a header "
        "line, then one abstract per paragraph), JSONL and CSV (fields id, title, abstract, "
        "authors, year, url; arXiv snapshot fields too). Bad records are reported as "
        "file:line: reason and skipped.",
    )
    ingest.add_argument("files", nargs="*", type=Path, metavar="FILE")
    ingest.add_argument("--sample", action="store_true",
                        help="ingest the bundled sample corpus (ICML 2026 abstracts)")
    ingest.set_defaults(run=_ingest)

    rebuild = sub.add_parser(
        "rebuild-index", help="embed new papers and publish a new index version",
        description="Embed papers that are new or changed since the last build (cached by "
        "content hash), build a FAISS index over all papers and publish it atomically. A "
        "running service switches to it within seconds.",
    )
    rebuild.add_argument("--quiet", action="store_true", help="no progress bar")
    rebuild.set_defaults(run=_rebuild)

    serve = sub.add_parser("serve", help="run the REST service (gunicorn)",
                           description="Serve the REST API with gunicorn.")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000),
                       help="port (default: $PORT or 8000)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (1)")
    serve.add_argument("--threads", type=int, default=8, help="threads per worker (8)")
    serve.set_defaults(run=_serve)
    return parser


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    files = list(args.files) + (jobs.sample_files() if args.sample else [])
    if not files:
        raise SystemExit("paperrec ingest: name at least one FILE, or --sample")
    summary = jobs.ingest(settings, files, on_rejection=lambda r: print(r, file=sys.stderr))
    print(f"ingest: {summary}")
    return 0


def _rebuild(args: argparse.Namespace, settings: Settings) -> int:
    print(f"rebuild-index: {jobs.rebuild_index(settings, progress=not args.quiet)}")
    return 0


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from .server import run

    run(settings, host=args.host, port=args.port, workers=args.workers, threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())

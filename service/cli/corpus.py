"""`paperrec ingest`, `fetch`, `stats` and `search`: what the corpus holds and how it grows."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recommender import jobs, wiring
from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.core.papers import Rejection
from recommender.corpus.arxiv import HarvestSummary
from recommender.corpus.arxiv_categories import set_for_category
from recommender.corpus.oai_pmh import HarvestFailed
from recommender.corpus.openreview import VenueSummary

from .parser import BAD_ARGUMENTS


def ingest(args: argparse.Namespace, settings: Settings) -> int:
    files = list(args.files) + (jobs.sample_files() if args.sample else [])
    if not files:
        print("paperrec ingest: name at least one FILE, or --sample", file=sys.stderr)
        return BAD_ARGUMENTS
    summary = wiring.build(settings).ingest(
        files, on_rejection=lambda r: print(r, file=sys.stderr), progress=not args.quiet)
    print(f"ingest: {summary}")
    print(f"ingest took {summary.timing()}")
    return 0


def fetch_arxiv(args: argparse.Namespace, settings: Settings) -> int:
    categories = args.category or [c.strip() for c in settings.arxiv_categories.split(",")
                                   if c.strip()]
    if not categories:
        print("paperrec fetch arxiv: name a --category (e.g. --category cs.LG) or set "
              "PAPERREC_ARXIV_CATEGORIES", file=sys.stderr)
        return BAD_ARGUMENTS
    try:  # the setting's names (--category values are checked by the parser)
        for name in categories:
            set_for_category(name)
    except InvalidInput as exc:
        print(f"paperrec fetch arxiv: PAPERREC_ARXIV_CATEGORIES: {exc.message}",
              file=sys.stderr)
        return BAD_ARGUMENTS
    summary = HarvestSummary()
    return _harvest("arxiv", summary, settings, lambda app: app.fetch_arxiv(
        categories, print_rejection, from_date=args.from_date, summary=summary,
        progress=not args.quiet))


def fetch_openreview(args: argparse.Namespace, settings: Settings) -> int:
    summary = VenueSummary()
    return _harvest("openreview", summary, settings, lambda app: app.fetch_openreview(
        args.venue, print_rejection, summary=summary, progress=not args.quiet))


def _harvest(source: str, summary: object, settings: Settings,
             fetch: Callable[[wiring.Paperrec], object]) -> int:
    """Run a harvest that fills ``summary`` as it stores pages, and say what it did, also
    when it stopped early. Only the corpus and the client are made: no Redis, no model."""
    app = wiring.build(settings)
    try:
        fetch(app)
    except HarvestFailed:
        print(f"fetch {source}: stopped early after {summary}", file=sys.stderr)
        raise
    finally:
        app.close()
    print(f"fetch {source}: {summary}")
    return 0


def print_rejection(rejection: Rejection) -> None:
    print(f"{rejection.source}: {rejection.reason}", file=sys.stderr)


def stats(args: argparse.Namespace, settings: Settings) -> int:
    app = wiring.build(settings)
    found = app.stats()
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    print(render_stats(found, settings.data_dir))
    return 0


def review_imports(args: argparse.Namespace, settings: Settings) -> int:
    corpus = wiring.build(settings).corpus
    if args.approve or args.reject:
        approved, rejected = corpus.approve(args.approve), corpus.reject(args.reject)
        unknown = len(args.approve) + len(args.reject) - approved - rejected
        print(f"review-imports: {approved} approved (in every reader's lists from the next "
              f"rebuild-index), {rejected} rejected and deleted"
              + (f"; {unknown} were not pending papers" if unknown else ""))
        return 0
    pending = corpus.pending(args.limit)
    total = corpus.pending_count()
    print(f"{total} papers from readers' imports are pending review"
          + (f" (the oldest {len(pending)} below)" if total > len(pending) else "")
          + (": approve with --approve ID..., delete with --reject ID..." if total else ""))
    for paper in pending:
        added = time.strftime("%Y-%m-%d %H:%M", time.gmtime(paper.added_at))
        print(f"{paper.id}  {added}  by {', '.join(paper.uploaders) or '(nobody now)'}\n"
              f"    {paper.title}" + (f"\n    {paper.url}" if paper.url else ""))
    return 0


def render_stats(found: dict[str, Any], data_dir: Path) -> str:
    corpus, index, model, readers = (found["corpus"], found["index"], found["collaborative"],
                                     found["readers"])
    lines = [f"data directory  {data_dir}",
             f"papers          {corpus['papers']} ({corpus['withdrawn']} withdrawn, "
             f"{corpus['pending']} upload{'' if corpus['pending'] == 1 else 's'} pending review)"]
    lines += [f"  harvested     {h['source']} {h['set']} up to {h['newest'] or '-'}"
              for h in corpus["harvests"]]
    lines.append(f"index           version {index['version']}: {index['papers']} papers, "
                 f"{index['kind']}, {index['embedding']}" if index["version"] else
                 "index           none yet: run `paperrec rebuild-index`")
    lines.append(f"collaborative   version {model['version']}: {model['users']} users, "
                 f"{model['papers']} papers" if model["version"] else
                 "collaborative   none yet: `paperrec train` once readers like papers")
    if readers is None:
        lines.append(f"readers         Redis unavailable ({found['redis_error']})")
    else:
        lines.append(f"readers         {readers['readers']}: {readers['likes']} likes, "
                     f"{readers['dislikes']} dislikes, {readers['subscribers']} digest "
                     f"subscribers")
    return "\n".join(lines)


def search(args: argparse.Namespace, settings: Settings) -> int:
    items = wiring.build(settings).recommender.search(args.query, args.k)
    for rank, item in enumerate(items, 1):
        print(f"{rank:>3}. {item.title}\n     {item.paper_id}  score {item.score:.3f}  "
              f"{item.reason}")
    if not items:
        print("no papers: is the index empty? (`paperrec stats`)")
    return 0

"""`paperrec list`, `import-library` and `export-library`: one reader's papers."""

from __future__ import annotations

import argparse
import sys
import time

from recommender import wiring
from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.core.ids import validate_user_id
from recommender.corpus.library import format_for, parse_library
from recommender.corpus.library_writers import write_library
from recommender.feedback.collections import validate_collection_id
from recommender.feedback.library import liked_papers


def reading_list(args: argparse.Namespace, settings: Settings) -> int:
    found = wiring.build(settings).recommender.recommend(
        validate_user_id(args.user), args.k, now=time.time(), record=False)
    kind = "personal" if found.personalized else "not personal yet: no likes"
    print(f"{args.user}'s reading list ({kind}; index {found.index_version})")
    for rank, item in enumerate(found.items, 1):
        print(f"{rank:>3}. {item.title}\n     {item.paper_id}  {item.reason}")
    return 0


def import_library(args: argparse.Namespace, settings: Settings) -> int:
    try:
        text = args.file.read_bytes().decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise InvalidInput(f"cannot read {args.file}: {exc.strerror}") from None
    fmt = args.format or format_for(None, args.file.name)
    collection = None if args.collection is None else validate_collection_id(args.collection)
    report = wiring.build(settings).import_library(parse_library(text, fmt),
                                                   validate_user_id(args.user), now=time.time(),
                                                   collection=collection)
    for item in report.rejected:
        where = f"line {item.line}" if item.line else f"entry {item.index}"
        print(f"{args.file}:{where}: {item.entry}: {item.reason}", file=sys.stderr)
    print(f"import-library: matched {len(report.matched)}, added {len(report.added)}, "
          f"already liked {len(report.already_liked)}, rejected {len(report.rejected)}; "
          f"{args.user} likes {report.liked} papers")
    return 0


def export_library(args: argparse.Namespace, settings: Settings) -> int:
    app = wiring.build(settings)
    user = validate_user_id(args.user)
    only = None if args.collection is None else set(
        app.collections.papers(user, validate_collection_id(args.collection)).paper_ids)
    papers = liked_papers(user, corpus=app.corpus, feedback=app.feedback, only=only)
    text = write_library(papers, args.format)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        print(f"export-library: {len(papers)} papers to {args.output}", file=sys.stderr)
    return 0

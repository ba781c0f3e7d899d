"""The `paperrec` command: batch jobs and the server, one subcommand each, `--help` on all."""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import math
import os
import shutil
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from recommender import jobs, wiring
from recommender.core.config import Settings
from recommender.core.errors import (
    ClusterUnreachable,
    InvalidInput,
    PaperrecError,
    StoreUnavailable,
)
from recommender.core.papers import Rejection
from recommender.corpus.arxiv import HarvestSummary, set_for_category
from recommender.corpus.oai_pmh import HarvestFailed
from recommender.corpus.openreview import VenueSummary, check_venue_id
from recommender.evaluation import dataset, runner
from recommender.evaluation.methods import INDEX_KINDS, METHOD_NAMES

MAX_PROBLEMS_SHOWN = 20
BAD_SETTINGS = 2  # exit status when a setting breaks its rule (as argparse's usage errors)
DEFAULT_PORT = 8000
# Read by this command only, not settings of the library: (variable, meaning, default).
COMMAND_VARIABLES = [("PORT", "port of paperrec serve when --port is not given",
                      str(DEFAULT_PORT))]


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a model hub
    parser = _parser()
    args = parser.parse_args(argv)
    # The server logs what it does; batch jobs print a summary and only warn in the log.
    level = logging.INFO if args.command == "serve" else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        settings = Settings.from_env()
    except InvalidInput as exc:  # nothing has started yet
        print(f"paperrec {args.command}: {exc.message}", file=sys.stderr)
        return BAD_SETTINGS
    try:
        return int(args.run(args, settings))
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
        epilog=environment_help(),
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

    _add_fetch(sub)
    _add_library(sub)

    rebuild = sub.add_parser(
        "rebuild-index", help="embed new papers and publish a new index version",
        description="Embed papers that are new or changed since the last build (cached by "
        "content hash), build a FAISS index over all papers and publish it atomically. A "
        "running service switches to it within seconds. When only papers were added (at most "
        "10% since the last full build, same model), the previous version is extended "
        "instead of rebuilt: the neighbour graph is updated around the new papers only. The "
        "summary says which kind ran and why.",
    )
    rebuild.add_argument("--quiet", action="store_true", help="no progress bar")
    rebuild.add_argument("--if-changed", action="store_true",
                         help="publish nothing when the current index already holds every "
                         "paper as it is (for schedules)")
    rebuild.add_argument("--full", action="store_true",
                         help="rebuild everything from scratch (recomputes the corpus mean)")
    rebuild.add_argument("--cluster", metavar="ADDRESS", type=_cluster_address,
                         help="embed on this Dask scheduler (tcp://host:8786), shard by shard; "
                         "overrides PAPERREC_EMBED_CLUSTER")
    rebuild.set_defaults(run=_rebuild)

    train = sub.add_parser(
        "train", help="fit collaborative filtering on the likes in Redis and publish it",
        description="Fit an implicit ALS model on every user's likes and publish it atomically "
        "beside the index. A running service picks it up within seconds; likes given after "
        "training count at once (users are folded in at request time).",
    )
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument("--if-changed", action="store_true",
                       help="publish nothing when the current model was trained on the same "
                       "likes and index, or when there are no likes yet (for schedules)")
    train.set_defaults(run=_train)

    digest = sub.add_parser(
        "digest", help="email each due subscriber their reading list",
        description="Find every subscriber who is due (daily or weekly, one digest per period), "
        "build their reading list with the service's engine (only papers never sent to them "
        "before) and send it through SMTP_URL. Safe to run again after a crash, and from cron.",
    )
    digest.add_argument("--dry-run", type=Path, metavar="DIR",
                        help="write .eml files into DIR; send and record nothing")
    digest.add_argument("--user", metavar="USER_ID", help="only this subscriber")
    digest.add_argument("--now", type=_iso_time, metavar="ISO-TIME",
                        help="pretend it is this time (UTC unless an offset is given)")
    digest.add_argument("--quiet", action="store_true", help="no progress bar")
    digest.set_defaults(run=_digest)

    _add_evaluate(sub)

    migrate = sub.add_parser(
        "migrate-redis", help="move Redis keys of an older paperrec into today's layout",
        description="Rename every per-user key of the namespace into its bucket (the layout "
        "that one server, Sentinel and Redis Cluster share), move the user and subscriber "
        "sets into their buckets and rebuild the like counts. Safe to run again; quick once "
        "done. `paperrec serve` runs it before it starts. Stop any older paperrec first.",
    )
    migrate.set_defaults(run=_migrate_redis)

    serve = sub.add_parser("serve", help="run the REST service (gunicorn)",
                           description="Serve the REST API with gunicorn.")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    serve.add_argument("--port", type=int, default=None,
                       help=f"port (default: $PORT or {DEFAULT_PORT})")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (1)")
    serve.add_argument("--threads", type=int, default=8, help="threads per worker (8)")
    serve.set_defaults(run=_serve)
    return parser


def environment_help() -> str:
    """Every variable with its meaning and default, made from the settings' declarations."""
    rows = [(Settings.variable(name), field.description or "", _shown(field.default))
            for name, field in Settings.model_fields.items()] + COMMAND_VARIABLES
    indent = 4 + max(len(variable) for variable, _, _ in rows)
    width = min(100, shutil.get_terminal_size().columns - 2)  # as argparse wraps
    lines = ["environment (unset or empty: the default):"]
    for variable, meaning, default in rows:
        text = meaning + (f" (default: {default})" if default else "")
        first, *rest = textwrap.wrap(text, width=max(30, width - indent),
                                     break_on_hyphens=False) or [""]
        lines += [f"  {variable:<{indent - 2}}{first}"] + [" " * indent + line for line in rest]
    return "\n".join(lines) + "\n"


def _shown(default: Any) -> str:
    return f"{default:g}" if isinstance(default, float) else str(default)


EVALUATE_HELP = """Offline evaluation on a dataset of papers and held-out likes.

Protocol: for each user with test papers, every paper not in the user's training set is
ranked; Recall@M = the user's test papers in the top M / the user's test papers (M = 20, 50,
100, 300); nDCG@20 with binary relevance, ideal DCG over min(20, #test) positions. Both are
averaged over the users with test papers. Training papers are never ranked, so never hits.
Content is title + abstract; other fields are ignored. Users missing from TRAIN have no likes.
Seconds per method are wall clock, fitting included (embedding the papers, shared by content
and hybrid and cached by content hash, is timed separately).

methods:
  popular     training likes per paper, the same list for every user
  content     mean cosine of the paper embeddings to the liked papers (zotero-arxiv-daily)
  content-max the same with the best cosine instead of the mean
  content-centred
              the strongest simple baseline: the same mean cosine over centred embeddings
              (the corpus mean subtracted, renormalised); no CF, popularity or neighbours
  content-augmented
              the same over the service's content space: centred vectors blended with
              their neighbours (the hybrid's content without its Fisher term); no CF or
              popularity
  cf          collaborative filtering alone (CollaborativeModel)
  tfidf-svm   arxiv-sanity: TF-IDF and a linear SVM per user (sampled negatives)
  hybrid      the production ranking (what the service serves)

hybrid's report also has "calibration": the probability of its top-20 items (Platt scaling
of the score, ranking/calibration.py) fitted on the held-out likes of one half of the users
and measured on the other half, then the other way round: "ece" is the expected calibration
error over 10 bins; "thresholds" says, for min_probability values, the share of the items
kept and how many of those were liked; "fitted" is the fit on all users.

hybrid ranks through the service's own ranking context, over an index version built as
`paperrec rebuild-index` builds one (in a temporary directory). --index picks its kind: auto
(exact up to PAPERREC_EXACT_INDEX_MAX papers, 20,000 by default, HNSW above, as the service
chooses), exact (every paper is scored), or hnsw (each list takes the cheaper of scoring
every paper and scoring the candidates the HNSW index finds, as lists over a large corpus
do: measurable on a small dataset). The report
says which kind was used ("index" in "dataset").

--new-papers FRACTION: the new-papers protocol. That fraction of the papers, chosen at
random from --seed, becomes new: every training like of theirs moves to the test set (they
stay in the corpus: their content is known, nobody has liked them). The usual figures are
reported on this split, and also the ranking of the new papers among themselves, as a digest
ranks its candidates: for each user with a new paper in test, only the new papers are
ranked; Recall@10, Recall@20, nDCG@10, nDCG@20 over the user's new test papers ("new_papers"
in the JSON, beside "methods"; "new_papers_fraction" in "dataset").
"""


def _add_evaluate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def method_list(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in names if name not in METHOD_NAMES]
        if unknown or not names:
            problem = f"unknown method {unknown[0]!r}" if unknown else "no method named"
            raise argparse.ArgumentTypeError(f"{problem}; choose from {','.join(METHOD_NAMES)}")
        return list(dict.fromkeys(names))

    def fraction(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value < 1:  # NaN fails too
            raise argparse.ArgumentTypeError(
                f"expected a fraction between 0 and 1 (exclusive), such as 0.2; got {text!r}")
        return value

    evaluate = sub.add_parser(
        "evaluate", help="measure recommendation methods on held-out likes",
        description=EVALUATE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    evaluate.add_argument("--papers", type=Path, required=True, metavar="PAPERS",
                          help="papers as JSONL or CSV (id, title, abstract)")
    evaluate.add_argument("--train", type=Path, required=True, metavar="TRAIN.tsv",
                          help="training likes, user<TAB>paper per line")
    evaluate.add_argument("--test", type=Path, required=True, metavar="TEST.tsv",
                          help="held-out likes, user<TAB>paper per line")
    evaluate.add_argument("--methods", type=method_list, required=True, metavar="LIST",
                          help="comma-separated method names (listed above)")
    evaluate.add_argument("--json", type=Path, required=True, metavar="OUT.json",
                          help="where to write the results (replaced atomically)")
    evaluate.add_argument("--seed", type=int, default=0, help="seed for every method (0)")
    evaluate.add_argument("--index", choices=INDEX_KINDS, default="auto",
                          help="the index hybrid ranks through: auto (by corpus size, as the "
                          "service), exact or hnsw (default: auto)")
    evaluate.add_argument("--new-papers", type=fraction, default=None, metavar="FRACTION",
                          help="make this fraction of the papers new (no training likes) and "
                          "also rank the new papers among themselves (see above)")
    evaluate.add_argument("--quiet", action="store_true", help="no progress bars")
    evaluate.set_defaults(run=_evaluate)


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    files = list(args.files) + (jobs.sample_files() if args.sample else [])
    if not files:
        raise SystemExit("paperrec ingest: name at least one FILE, or --sample")
    summary = wiring.build(settings).ingest(files, on_rejection=lambda r: print(r, file=sys.stderr))
    print(f"ingest: {summary}")
    return 0


def _add_library(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    formats = ["bibtex", "ris", "csl-json", "ids"]
    importer = sub.add_parser(
        "import-library", help="like the papers of a reference manager's export",
        description="Import a BibTeX, RIS or CSL-JSON file (Zotero, Mendeley, ...) or a list "
        "of arXiv ids and DOIs (one a line) as a user's likes, as POST "
        "/v1/users/ID/library does: papers in the corpus are liked, the others added and "
        "liked (embedded now with the configured model, so the next reading list counts "
        "them), unreadable entries reported. The format from the extension (.bib, .ris, "
        ".json, .txt) unless --format says.")
    importer.add_argument("file", type=Path, metavar="FILE")
    importer.add_argument("--user", required=True, help="the user id")
    importer.add_argument("--format", choices=formats, help="the file's format")
    importer.set_defaults(run=_import_library)
    exporter = sub.add_parser(
        "export-library", help="write a user's liked papers as BibTeX, RIS or CSL-JSON",
        description="The user's liked papers as a file a reference manager imports, as GET "
        "/v1/users/ID/library gives it; to stdout unless -o names a file.")
    exporter.add_argument("--user", required=True, help="the user id")
    exporter.add_argument("--format", choices=formats[:3], default="bibtex",
                          help="bibtex (default), ris or csl-json")
    exporter.add_argument("-o", "--output", type=Path, metavar="FILE", help="write it here")
    exporter.set_defaults(run=_export_library)


def _import_library(args: argparse.Namespace, settings: Settings) -> int:
    from recommender.core.ids import validate_user_id
    from recommender.corpus.library import format_for, parse_library

    try:
        text = args.file.read_bytes().decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise InvalidInput(f"cannot read {args.file}: {exc.strerror}") from None
    fmt = args.format or format_for(None, args.file.name)
    report = wiring.build(settings).import_library(parse_library(text, fmt),
                                                   validate_user_id(args.user), now=time.time())
    for item in report.rejected:
        where = f"line {item.line}" if item.line else f"entry {item.index}"
        print(f"{args.file}:{where}: {item.entry}: {item.reason}", file=sys.stderr)
    print(f"import-library: matched {len(report.matched)}, added {len(report.added)}, "
          f"already liked {len(report.already_liked)}, rejected {len(report.rejected)}; "
          f"{args.user} likes {report.liked} papers")
    return 0


def _export_library(args: argparse.Namespace, settings: Settings) -> int:
    from recommender.core.ids import validate_user_id
    from recommender.corpus.library_writers import write_library
    from recommender.feedback.library import liked_papers

    parts = wiring.build(settings)
    papers = liked_papers(validate_user_id(args.user), corpus=parts.corpus,
                          feedback=parts.feedback)
    text = write_library(papers, args.format)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        print(f"export-library: {len(papers)} papers to {args.output}", file=sys.stderr)
    return 0


FETCH_ARXIV_HELP = """Harvest paper metadata from arXiv's OAI-PMH interface into the corpus.

Each --category is harvested as its OAI set (cs.LG -> cs:cs:LG, hep-th -> physics:hep-th,
cs -> the whole group), in metadata format arXiv. The first run harvests everything in the
set (or from --from); every later run continues from the newest datestamp the last one
stored, so a daily run fetches only new and updated papers. A harvest that stops half-way
(network down, the server failing after PAPERREC_ARXIV_RETRIES retries) keeps what it stored
and its resumption token: run the same command again and it continues from there.

Ids are the arXiv id without its version (2401.01234): a new version updates the paper
(re-embedded by the next rebuild-index). A withdrawn paper (a deleted record, or "This paper
has been withdrawn" in its comments or abstract) is marked in the corpus and left out of the
next rebuild-index; until then the current index can still recommend it. Records that cannot
be read (no title, ...) are reported as "identifier: reason" and skipped.

Requests are PAPERREC_ARXIV_DELAY_SECONDS apart (3 s, as arXiv asks); a 503 with Retry-After
waits that long (at most 10 minutes); network errors and other 5xx back off exponentially
(5 s, 10 s, 20 s, ...). The endpoint is PAPERREC_ARXIV_OAI_URL. Ends with: fetched, added,
updated, unchanged, withdrawn, rejected. Exit status 1 when the harvest stopped early.
"""


FETCH_OPENREVIEW_HELP = """Fetch a conference's accepted papers from OpenReview into the corpus.

Each --venue is an OpenReview venue id, as in the venue's address
(https://openreview.net/group?id=ICML.cc/2026/Conference). Its accepted papers are the notes
whose venueid is exactly that id (rejected and withdrawn submissions carry
<venue>/Rejected_Submission, <venue>/Withdrawn_Submission and are never stored), read from
OpenReview's API v2 (PAPERREC_OPENREVIEW_URL) a thousand a request.

Ids are openreview:<forum id>, the url the forum page, the date the publication date, the
venue string ("ICML 2026 Poster") the paper's category. A paper the corpus holds already
(an arXiv preprint with the same arXiv id, DOI, or title and first author) is stored once,
merged: it keeps its id and is found by the openreview: id too. A re-run fetches the list
again and changes nothing unless OpenReview did (a note modified since is stored again);
a fetch that stops half-way keeps what it stored and continues from there when run again.
Notes that cannot be read (no title, ...) are reported as "openreview:<id>: reason" and
skipped. A venue with no accepted papers (a mistyped id, or decisions not public yet) stops
with a message.

Requests are PAPERREC_OPENREVIEW_DELAY_SECONDS apart; a 429 (rate limited) or 503 waits as
its Retry-After says (at most 10 minutes), else backs off exponentially (5 s, 10 s, ...), as
do network errors and other 5xx, PAPERREC_OPENREVIEW_RETRIES times. Ends with: fetched,
added, updated, unchanged, merged, rejected. Exit status 1 when the fetch stopped early or a
venue has nothing accepted.
"""


def _add_fetch(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def category(text: str) -> str:
        try:
            set_for_category(text)
        except InvalidInput as exc:
            raise argparse.ArgumentTypeError(exc.message) from None
        return text.strip()

    def day(text: str) -> str:
        try:
            return dt.date.fromisoformat(text).isoformat() if len(text) == 10 else _no_day(text)
        except ValueError:
            return _no_day(text)

    fetch = sub.add_parser("fetch", help="harvest new papers from a source (arXiv, "
                           "OpenReview)",
                           description="Harvest new and updated papers into the corpus.")
    sources = fetch.add_subparsers(dest="source", required=True, metavar="SOURCE")
    arxiv = sources.add_parser("arxiv", help="arXiv, through its OAI-PMH interface",
                               description=FETCH_ARXIV_HELP,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    arxiv.add_argument("--category", type=category, action="append",
                       metavar="CATEGORY", help="an arXiv category (cs.LG, stat.ML, hep-th, "
                       "astro-ph.CO) or group (cs, math, physics, ...); repeat for several "
                       "(default: PAPERREC_ARXIV_CATEGORIES)")
    arxiv.add_argument("--from", dest="from_date", type=day, metavar="YYYY-MM-DD",
                       help="start a new harvest from this day (records created or updated on "
                       "or after it) instead of where the last one ended")
    arxiv.add_argument("--quiet", action="store_true", help="no progress bar")
    arxiv.set_defaults(run=_fetch_arxiv)

    def venue(text: str) -> str:
        try:
            return check_venue_id(text)
        except InvalidInput as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    openreview = sources.add_parser("openreview", help="a conference's accepted papers, "
                                    "from OpenReview's API", description=FETCH_OPENREVIEW_HELP,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    openreview.add_argument("--venue", type=venue, action="append", required=True,
                            metavar="VENUE_ID", help="an OpenReview venue id, e.g. "
                            "ICML.cc/2026/Conference; repeat for several")
    openreview.add_argument("--quiet", action="store_true", help="no progress bar")
    openreview.set_defaults(run=_fetch_openreview)


def _no_day(text: str) -> str:
    raise argparse.ArgumentTypeError(f"not a date written YYYY-MM-DD: {text!r}")


def _fetch_arxiv(args: argparse.Namespace, settings: Settings) -> int:
    categories = args.category or [c.strip() for c in settings.arxiv_categories.split(",")
                                   if c.strip()]
    if not categories:
        print("paperrec fetch arxiv: name a --category (e.g. --category cs.LG) or set "
              "PAPERREC_ARXIV_CATEGORIES", file=sys.stderr)
        return 2
    try:
        for name in categories:
            set_for_category(name)
    except InvalidInput as exc:  # from the setting (--category values are checked by argparse)
        print(f"paperrec fetch arxiv: PAPERREC_ARXIV_CATEGORIES: {exc.message}",
              file=sys.stderr)
        return BAD_SETTINGS
    app = wiring.build(settings)  # only the corpus and the client are made: no Redis, no model
    summary = HarvestSummary()
    try:
        app.fetch_arxiv(categories, _print_rejection, from_date=args.from_date,
                        summary=summary, progress=not args.quiet)
    except HarvestFailed:
        print(f"fetch arxiv: stopped early after {summary}", file=sys.stderr)
        raise
    finally:
        app.close()
    print(f"fetch arxiv: {summary}")
    return 0


def _fetch_openreview(args: argparse.Namespace, settings: Settings) -> int:
    app = wiring.build(settings)  # only the corpus and the client are made: no Redis, no model
    summary = VenueSummary()
    try:
        app.fetch_openreview(args.venue, _print_rejection, summary=summary,
                             progress=not args.quiet)
    except HarvestFailed:
        print(f"fetch openreview: stopped early after {summary}", file=sys.stderr)
        raise
    finally:
        app.close()
    print(f"fetch openreview: {summary}")
    return 0


def _print_rejection(rejection: Rejection) -> None:
    print(f"{rejection.source}: {rejection.reason}", file=sys.stderr)


def _cluster_address(value: str) -> str:
    try:
        return str(Settings.check("embed_cluster", value))
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(exc.message.split(": ", 1)[-1]) from None


def _rebuild(args: argparse.Namespace, settings: Settings) -> int:
    try:
        summary = wiring.build(settings).rebuild_index(
            full=args.full, if_changed=args.if_changed, cluster=args.cluster or "",
            progress=not args.quiet)
    except ClusterUnreachable as exc:  # an address to check, as a bad setting
        print(f"paperrec {args.command}: {exc.message}", file=sys.stderr)
        return BAD_SETTINGS
    print(f"rebuild-index: {summary}")
    return 0


def _evaluate(args: argparse.Namespace, settings: Settings) -> int:
    problems = 0

    def report(problem: str) -> None:
        nonlocal problems
        problems += 1
        if problems <= MAX_PROBLEMS_SHOWN:
            print(problem, file=sys.stderr)

    data = dataset.load_dataset(args.papers, args.train, args.test, on_problem=report)
    if problems > MAX_PROBLEMS_SHOWN:
        print(f"... and {problems - MAX_PROBLEMS_SHOWN} more problems", file=sys.stderr)
    result = wiring.build(settings).evaluate(data, args.methods, seed=args.seed,
                                             index=args.index, new_papers=args.new_papers,
                                             progress=not args.quiet)
    runner.write_report(result, args.json)
    print(runner.render_table(result))
    print(f"evaluate: wrote {args.json}")
    return 0


def _train(args: argparse.Namespace, settings: Settings) -> int:
    summary = wiring.build(settings).train(if_changed=args.if_changed, progress=not args.quiet)
    print(f"train: {summary}")
    return 0


def _iso_time(value: str) -> float:
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO time like 2026-11-30T07:00: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def _digest(args: argparse.Namespace, settings: Settings) -> int:
    now = args.now if args.now is not None else time.time()
    summary = wiring.build(settings).send_digests(now, only_user=args.user,
                                                  dry_run=args.dry_run, progress=not args.quiet)
    print(f"digest: {summary}")
    return 1 if summary.failed else 0


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from .auth import ApiKeys
    from .server import run

    try:  # what the workers would find wrong stops here, before gunicorn starts
        keys = ApiKeys.parse(settings.api_keys, settings.api_keys_file)
        port = args.port if args.port is not None else _port_from_environment()
    except InvalidInput as exc:
        print(f"paperrec serve: {exc.message}", file=sys.stderr)
        return BAD_SETTINGS
    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    if not loopback and not keys:
        print(f"paperrec serve: refusing to listen on {args.host} without API keys; set "
              f"PAPERREC_API_KEYS (e.g. admin:<long random key>) or serve on 127.0.0.1",
              file=sys.stderr)
        return 2

    try:
        _migrate_redis(args, settings)
    except StoreUnavailable as exc:  # the service answers 503 until Redis is back
        print(f"paperrec serve: keys not migrated, Redis unavailable ({exc.message}); "
              f"run `paperrec migrate-redis` once it answers", file=sys.stderr)
    run(settings, host=args.host, port=port, workers=args.workers, threads=args.threads)
    return 0


def _migrate_redis(args: argparse.Namespace, settings: Settings) -> int:
    summary = wiring.build(settings).migrate_redis()
    if not summary.already_done:
        print(f"migrate-redis: {summary.keys_moved} keys moved; {summary.users} users, "
              f"{summary.liked_papers} liked papers counted")
    return 0


def _port_from_environment() -> int:
    raw = os.environ.get("PORT") or str(DEFAULT_PORT)
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise InvalidInput(f"PORT={raw!r} is not a port number (1-65535)")
    return int(raw)


if __name__ == "__main__":
    sys.exit(main())

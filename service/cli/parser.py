"""Every `paperrec` command and its arguments. Imports nothing heavy: `--help` answers at once.

Each command sets ``run="module:function"``, a function of this package that takes the parsed
arguments and the settings and returns the exit status. An argument's check that needs the
library (a method name, an arXiv category) imports it when that argument is parsed, not
before. A mistaken argument exits with status 2 and says why (argparse's convention).
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from .texts import EVALUATE_HELP, FETCH_ARXIV_HELP, FETCH_OPENREVIEW_HELP, SIMULATE_HELP

BAD_ARGUMENTS = 2  # exit status of a mistaken argument or setting, as argparse's usage errors
DEFAULT_PORT = 8000
MAX_ONBOARDING_ANSWERS = 50  # evaluation.onboarding.MAX_ANSWERS (not imported: --help is quick)
LIBRARY_FORMATS = ("bibtex", "ris", "csl-json", "ids")
Commands = argparse._SubParsersAction


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paperrec", description="Personalized research-paper recommendations.",
        epilog="Settings come from environment variables: `paperrec settings` lists each with "
        "its meaning and default. `paperrec COMMAND --help` tells more of a command.")
    parser.add_argument("--version", action=_Version, help="print paperrec's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_setup(sub)
    _add_corpus(sub)
    _add_jobs(sub)
    _add_readers(sub)
    _add_evaluate(sub)
    _add_online(sub)
    _add_simulate(sub)
    _add_operations(sub)
    return parser


class _Version(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import version

        print(f"paperrec {version('paperrec')}")
        parser.exit()


def _add_setup(sub: Commands) -> None:
    init = sub.add_parser(
        "init", help="prepare a data directory: keys, secret, sample corpus, first index",
        description="Make what a new deployment needs, and nothing that is there already "
        "(safe to run at every start): the API keys file PAPERREC_API_KEYS_FILE names, with "
        "an admin and a client key, when it is missing; the secret that signs email links "
        "(unless PAPERREC_SECRET_KEY is set); with --sample, the bundled sample corpus when "
        "the corpus is empty; and a first index when there is none.")
    init.add_argument("--sample", action="store_true",
                      help="ingest the bundled sample corpus (38 ICML 2026 abstracts) into an "
                      "empty corpus")
    init.add_argument("--quiet", action="store_true", help="no progress bar")
    init.set_defaults(run="operations:init")

    settings = sub.add_parser(
        "settings", help="list every setting with its meaning and default",
        description="Every environment variable paperrec reads, its meaning and default "
        "(unset or empty: the default). --env-file writes them as an env file that docker "
        "compose reads (each line commented out: uncomment to change).")
    settings.add_argument("--env-file", action="store_true",
                          help="as an env file (paperrec.env beside docker-compose.yml)")
    settings.set_defaults(run="operations:show_settings")


def _add_corpus(sub: Commands) -> None:
    ingest = sub.add_parser(
        "ingest", help="add or update papers from files",
        description="Read papers into the corpus. Formats: the paper-list text format (a header "
        "line, then one abstract per paragraph), JSONL and CSV (fields id, title, abstract, "
        "authors, year, url; arXiv snapshot fields too). Bad records are reported as "
        "file:line: reason and skipped.")
    ingest.add_argument("files", nargs="*", type=Path, metavar="FILE")
    ingest.add_argument("--sample", action="store_true",
                        help="ingest the bundled sample corpus (ICML 2026 abstracts)")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(run="corpus:ingest")

    fetch = sub.add_parser("fetch", help="harvest new papers from a source (arXiv, OpenReview)",
                           description="Harvest new and updated papers into the corpus.")
    sources = fetch.add_subparsers(dest="source", required=True, metavar="SOURCE")
    arxiv = sources.add_parser("arxiv", help="arXiv, through its OAI-PMH interface",
                               description=FETCH_ARXIV_HELP,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    arxiv.add_argument("--category", type=_arxiv_category, action="append",
                       metavar="CATEGORY", help="an arXiv category (cs.LG, stat.ML, hep-th, "
                       "astro-ph.CO) or group (cs, math, physics, ...); repeat for several "
                       "(default: PAPERREC_ARXIV_CATEGORIES)")
    arxiv.add_argument("--from", dest="from_date", type=_day, metavar="YYYY-MM-DD",
                       help="start a new harvest from this day (records created or updated on "
                       "or after it) instead of where the last one ended")
    arxiv.add_argument("--quiet", action="store_true", help="no progress bar")
    arxiv.set_defaults(run="corpus:fetch_arxiv")
    openreview = sources.add_parser("openreview", help="a conference's accepted papers, "
                                    "from OpenReview's API", description=FETCH_OPENREVIEW_HELP,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    openreview.add_argument("--venue", type=_venue, action="append", required=True,
                            metavar="VENUE_ID", help="an OpenReview venue id, e.g. "
                            "ICML.cc/2026/Conference; repeat for several")
    openreview.add_argument("--quiet", action="store_true", help="no progress bar")
    openreview.set_defaults(run="corpus:fetch_openreview")

    stats = sub.add_parser(
        "stats", help="what is in the corpus, the index and Redis",
        description="Papers (by source), the served index version and its model, the "
        "collaborative model, readers, likes and dislikes, digest subscribers.")
    stats.add_argument("--json", action="store_true", help="as JSON")
    stats.set_defaults(run="corpus:stats")

    review = sub.add_parser(
        "review-imports", help="approve or reject the papers readers' imports added",
        description="A paper that only a reader's library import brought is that reader's "
        "alone: no other reader's list, search or feed shows it until the same paper arrives "
        "from arXiv, OpenReview or `paperrec ingest`, or an operator approves it here (or on "
        "the /admin/imports page). Without options: the pending papers, oldest first. "
        "Approved papers count for every reader from the next rebuild-index; rejected ones "
        "are deleted.")
    review.add_argument("--approve", nargs="+", default=[], metavar="ID",
                        help="verify these papers")
    review.add_argument("--reject", nargs="+", default=[], metavar="ID",
                        help="delete these papers")
    review.add_argument("--limit", type=_count, default=50,
                        help="how many pending papers to list (50)")
    review.set_defaults(run="corpus:review_imports")

    search = sub.add_parser("search", help="search the papers from the terminal",
                            description="The papers that match QUERY by their words and "
                            "by meaning, as the service's search answers: an exact title "
                            "first, then an author the query names (docs/guide/search.md).")
    search.add_argument("query", metavar="QUERY", help=(
        "words, e.g. 'federated learning'; also \"a phrase\", au:name, ti:word, year:2020 "
        "or year:2019-2021"))
    search.add_argument("-k", type=_count, default=10, help="how many papers (10)")
    search.set_defaults(run="corpus:search")


def _add_jobs(sub: Commands) -> None:
    rebuild = sub.add_parser(
        "rebuild-index", help="embed new papers and publish a new index version",
        description="Embed papers that are new or changed since the last build (cached by "
        "content hash), build a FAISS index over all papers and publish it atomically. A "
        "running service switches to it within seconds. When only papers were added (at most "
        "10% since the last full build, same model), the previous version is extended "
        "instead of rebuilt: the neighbour graph is updated around the new papers only. The "
        "summary says which kind ran and why.")
    rebuild.add_argument("--quiet", action="store_true", help="no progress bar")
    rebuild.add_argument("--if-changed", action="store_true",
                         help="publish nothing when the current index already holds every "
                         "paper as it is (for schedules)")
    rebuild.add_argument("--full", action="store_true",
                         help="rebuild everything from scratch (recomputes the corpus mean)")
    rebuild.add_argument("--cluster", metavar="ADDRESS", type=_cluster_address, default="",
                         help="embed on this Dask scheduler (tcp://host:8786), shard by shard; "
                         "overrides PAPERREC_EMBED_CLUSTER")
    rebuild.set_defaults(run="jobs:rebuild_index")

    train = sub.add_parser(
        "train", help="fit collaborative filtering on the likes in Redis and publish it",
        description="Fit an implicit ALS model on every user's likes and publish it atomically "
        "beside the index. A running service picks it up within seconds; likes given after "
        "training count at once (users are folded in at request time).")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument("--if-changed", action="store_true",
                       help="publish nothing when the current model was trained on the same "
                       "likes and index, or when there are no likes yet (for schedules)")
    train.set_defaults(run="jobs:train")

    digest = sub.add_parser(
        "digest", help="email each due subscriber their reading list",
        description="Find every subscriber who is due (daily or weekly, one digest per period), "
        "build their reading list with the service's engine (only papers never sent to them "
        "before) and send it through SMTP_URL. Safe to run again after a crash, and from cron.")
    digest.add_argument("--dry-run", type=Path, metavar="DIR",
                        help="write .eml files into DIR; send and record nothing")
    digest.add_argument("--user", metavar="USER_ID", help="only this subscriber")
    digest.add_argument("--now", type=_iso_time, metavar="ISO-TIME",
                        help="pretend it is this time (UTC unless an offset is given)")
    digest.add_argument("--quiet", action="store_true", help="no progress bar")
    digest.set_defaults(run="jobs:digest")

    zotero = sub.add_parser(
        "sync-zotero", help="sync the readers' connected Zotero libraries (likes, collections)",
        description="Read what changed in each connected Zotero library since its last sync "
        "(PAPERREC_ZOTERO_API_URL) and apply it: items become likes, items deleted or trashed "
        "in Zotero stop being likes that came from Zotero, collections follow. One line per "
        "library (added N, removed N, skipped N, ...). A library that runs out of its time "
        "(PAPERREC_ZOTERO_BUDGET_SECONDS) keeps what it fetched and finishes next run. Exit "
        "status 1 when a library could not be synced at all (a revoked key, Zotero down); "
        "the others are synced still.")
    zotero.add_argument("--user", metavar="USER_ID", help="only this reader's library")
    zotero.add_argument("--budget", type=_seconds, metavar="SECONDS",
                        help="time per library (default PAPERREC_ZOTERO_BUDGET_SECONDS)")
    zotero.set_defaults(run="jobs:sync_zotero")

    schedule = sub.add_parser(
        "jobs", help="run the scheduled jobs: fetch, sync Zotero, rebuild, train, digests, "
        "export events, again and again",
        description="Every PAPERREC_JOBS_INTERVAL_SECONDS: harvest arXiv (the categories in "
        "PAPERREC_ARXIV_CATEGORIES, if any), sync the connected Zotero libraries, embed "
        "what is new and publish an index version, "
        "retrain collaborative filtering, mail the digests that are due, move the impression "
        "log into its daily files and write the online figures (`paperrec export-events`). "
        "A step with nothing "
        "new publishes nothing; a failed step is logged and the next ones still run; it is "
        "tried again next round. One `paperrec jobs` runs at a time on a data directory (a "
        "second one waits for the first's lock). Stops cleanly on SIGTERM or Ctrl-C.")
    schedule.add_argument("--once", action="store_true",
                          help="run one round and exit (for cron); exit status 1 if a step "
                          "failed")
    schedule.set_defaults(run="jobs:schedule")


def _add_readers(sub: Commands) -> None:
    reading = sub.add_parser("list", help="a reader's reading list, in the terminal",
                             description="USER's reading list as the service ranks it now, "
                             "with the reason for each paper. Records nothing as served.")
    reading.add_argument("user", metavar="USER", help="the user id")
    reading.add_argument("-k", type=_count, default=10, help="how many papers (10)")
    reading.set_defaults(run="readers:reading_list")

    importer = sub.add_parser(
        "import-library", help="like the papers of a reference manager's export",
        description="Import a BibTeX, RIS or CSL-JSON file (Zotero, Mendeley, ...) or a list "
        "of arXiv ids and DOIs (one a line) as a user's likes, as POST "
        "/v1/users/ID/library does: papers in the corpus are liked, the others added (the "
        "user's alone until verified: `paperrec review-imports`) and liked (embedded now "
        "with the configured model, so the next reading list counts "
        "them), unreadable entries reported. The format from the extension (.bib, .ris, "
        ".json, .txt) unless --format says.")
    importer.add_argument("file", type=Path, metavar="FILE")
    importer.add_argument("--user", required=True, help="the user id")
    importer.add_argument("--format", choices=LIBRARY_FORMATS, help="the file's format")
    importer.add_argument("--collection", metavar="ID",
                          help="put the papers in this collection of the user's")
    importer.set_defaults(run="readers:import_library")

    exporter = sub.add_parser(
        "export-library", help="write a user's liked papers as BibTeX, RIS or CSL-JSON",
        description="The user's liked papers as a file a reference manager imports, as GET "
        "/v1/users/ID/library gives it; to stdout unless -o names a file.")
    exporter.add_argument("--user", required=True, help="the user id")
    exporter.add_argument("--format", choices=LIBRARY_FORMATS[:3], default="bibtex",
                          help="bibtex (default), ris or csl-json")
    exporter.add_argument("-o", "--output", type=Path, metavar="FILE", help="write it here")
    exporter.add_argument("--collection", metavar="ID",
                          help="only the papers of this collection of the user's")
    exporter.set_defaults(run="readers:export_library")


def _add_evaluate(sub: Commands) -> None:
    evaluate = sub.add_parser(
        "evaluate", help="measure recommendation methods on held-out likes",
        description=EVALUATE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    evaluate.add_argument("--papers", type=Path, required=True, metavar="PAPERS",
                          help="papers as JSONL or CSV (id, title, abstract)")
    evaluate.add_argument("--train", type=Path, required=True, metavar="TRAIN.tsv",
                          help="training likes, user<TAB>paper per line")
    evaluate.add_argument("--test", type=Path, required=True, metavar="TEST.tsv",
                          help="held-out likes, user<TAB>paper per line")
    evaluate.add_argument("--methods", type=_method_list, required=True, metavar="LIST",
                          help="comma-separated method names (listed above)")
    evaluate.add_argument("--json", type=Path, required=True, metavar="OUT.json",
                          help="where to write the results (replaced atomically)")
    evaluate.add_argument("--seed", type=int, default=0, help="seed for every method (0)")
    evaluate.add_argument("--index", type=_index_kind, default="auto",
                          metavar="{auto,exact,hnsw}",
                          help="the index hybrid ranks through: auto (by corpus size, as the "
                          "service), exact or hnsw (default: auto)")
    evaluate.add_argument("--new-papers", type=_fraction, default=None, metavar="FRACTION",
                          help="make this fraction of the papers new (no training likes) and "
                          "also rank the new papers among themselves (see above)")
    evaluate.add_argument("--onboarding", type=_answer_counts, default=None, metavar="N,N",
                          help="also simulate new readers answering N onboarding questions "
                          "(the welcome page's, random or popular papers) and score their "
                          "first list, e.g. 5,10 (see above)")
    evaluate.add_argument("--interests", action="store_true",
                          help="also report nDCG@20 and Recall@20 apart for the users whose "
                          "training likes span several topics (clusters) and the others")
    evaluate.add_argument("--quiet", action="store_true", help="no progress bars")
    evaluate.set_defaults(run="evaluate:evaluate")


def _add_online(sub: Commands) -> None:
    report = sub.add_parser(
        "report", help="the online figures: what the lists served did, per ranking variant",
        description="From the impression log (every list served and what its readers did "
        "with it; docs/deployment/online.md): per ranking variant and surface, the lists "
        "and papers served, like rate at places 1, 5 and 10, dislike rate, coverage of the "
        "corpus, new papers served and liked; new readers' time to their first like; each "
        "experiment's verdict (over its whole span); the calibration error of the "
        "probabilities shown. Reads the whole window: on a large log it takes a while.")
    window = report.add_mutually_exclusive_group()
    window.add_argument("--days", type=_count, default=14,
                        help="the last N days (14)")
    window.add_argument("--all", action="store_true", help="the whole log")
    report.add_argument("--json", action="store_true",
                        help="the report as JSON (report['variants'][variant][surface])")
    report.set_defaults(run="online:report")

    export = sub.add_parser(
        "export-events", help="move the impression log into daily files; write the figures",
        description="Append the lists served and the outcomes logged since the last export "
        "from Redis to the daily JSON-lines files of <data dir>/events/ (lists-DAY.jsonl, "
        "outcomes-DAY.jsonl), trim them from Redis, then write the figures of the last 7 "
        "days (events/report-latest.json) that /metrics and /admin/online show. A step of "
        "every `paperrec jobs` round.")
    export.set_defaults(run="online:export_events")

    experiment = sub.add_parser(
        "experiment", help="compare a ranking variant with production online",
        description="Without an action: the experiment running and those that ran, each with "
        "its verdict. `start CANDIDATE` serves a ranking variant (built in or from "
        "PAPERREC_RANKING_VARIANTS) beside production (hybrid) from the next list on; `stop` "
        "ends it (its figures stay in the report).")
    actions = experiment.add_subparsers(dest="action", metavar="ACTION")
    start = actions.add_parser(
        "start", help="start comparing CANDIDATE with production",
        description="Start an experiment (stopping the one running). interleave: every "
        "list mixes production's and the candidate's papers (team draft) and the lists the "
        "readers' likes, opens and clicks favour decide; ab: each reader gets one variant, "
        "--share of them the candidate.")
    start.add_argument("candidate", metavar="CANDIDATE", help="a ranking variant's name")
    start.add_argument("--mode", choices=("interleave", "ab"), default="interleave",
                       help="interleave (default) or ab")
    start.add_argument("--share", type=_fraction, default=0.5,
                       help="ab: the share of readers served the candidate (0.5)")
    actions.add_parser("stop", help="stop the experiment running",
                       description="Stop the experiment running; its verdict stays in the "
                       "report and in `paperrec experiment`.")
    experiment.set_defaults(run="online:experiment")


def _add_simulate(sub: Commands) -> None:
    simulate = sub.add_parser(
        "simulate", help="replay a dataset's readers day by day: interleaving, calibration",
        description=SIMULATE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    simulate.add_argument("--papers", type=Path, default=None, metavar="PAPERS",
                          help="papers as JSONL or CSV (id, title, abstract)")
    simulate.add_argument("--train", type=Path, default=None, metavar="TRAIN.tsv",
                          help="the readers' likes before the simulation, user<TAB>paper")
    simulate.add_argument("--test", type=Path, default=None, metavar="TEST.tsv",
                          help="the papers each reader likes when served, user<TAB>paper")
    simulate.add_argument("--users", type=_count, default=None,
                          help="readers simulated, drawn among those with held-out papers "
                          "(default: 500; with --service: 20)")
    simulate.add_argument("--days", type=_count, default=30,
                          help="days of the experiment, and of the month after it "
                          "(default: 30)")
    simulate.add_argument("--variants", type=_variant_pair, default=["hybrid", "popular"],
                          metavar="A,B",
                          help="production A against candidate B: ranking variants or "
                          "methods of `paperrec evaluate` (default: hybrid,popular; "
                          "hybrid,hybrid is the A/A check)")
    simulate.add_argument("--seed", type=int, default=0,
                          help="seed of the readers drawn and of what they look at (0)")
    simulate.add_argument("--skip-chance", type=_chance, default=0.3, metavar="P",
                          help="the chance a reader does not look at a paper they would "
                          "like (default: 0.3)")
    simulate.add_argument("--no-next-month", action="store_true",
                          help="stop after the experiment: no refit of the probability on "
                          "the log, no month after it")
    simulate.add_argument("--json", type=Path, default=None, metavar="OUT.json",
                          help="where to write the results (replaced atomically)")
    simulate.add_argument("--quiet", action="store_true", help="no progress bars")
    live = simulate.add_argument_group(
        "readers of a running service", "--service URL: simulated readers (sim-0001, ...) "
        "use that service's REST API, so their lists and likes reach its impression log, "
        "its report, its admin page and the experiment it runs; no dataset is needed")
    live.add_argument("--service", metavar="URL", default="",
                      help="the service's address, e.g. http://127.0.0.1:8000")
    live.add_argument("--rounds", type=_count, default=10,
                      help="times each reader comes back for their list (10)")
    live.add_argument("--api-key", default="", metavar="KEY",
                      help="an API key, when the service has keys (an admin key for --forget)")
    live.add_argument("--forget", action="store_true",
                      help="erase the simulated readers from the service instead "
                      "(their likes, and their lists and likes in the impression log)")
    simulate.set_defaults(run="simulate:simulate")


def _add_operations(sub: Commands) -> None:
    migrate = sub.add_parser(
        "migrate-redis", help="move Redis keys of an older paperrec into today's layout",
        description="Rename every per-user key of the namespace into its bucket (the layout "
        "that one server, Sentinel and Redis Cluster share), move the user and subscriber "
        "sets into their buckets and rebuild the like counts. Safe to run again; quick once "
        "done. `paperrec serve` runs it before it starts. Stop any older paperrec first.")
    migrate.set_defaults(run="operations:migrate_redis")

    serve = sub.add_parser("serve", help="run the REST service and the pages (gunicorn)",
                           description="Serve the REST API and the web pages with gunicorn.")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    serve.add_argument("--port", type=int, default=None,
                       help=f"port (default: $PORT or {DEFAULT_PORT})")
    serve.add_argument("--workers", type=_count, default=1, help="worker processes (1)")
    serve.add_argument("--threads", type=_count, default=8, help="threads per worker (8)")
    serve.set_defaults(run="operations:serve")


# --- argument checks: ArgumentTypeError becomes argparse's usage error (exit status 2) ---------

def _arxiv_category(text: str) -> str:
    from recommender.core.errors import InvalidInput
    from recommender.corpus.arxiv_categories import set_for_category

    try:
        set_for_category(text)
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return text.strip()


def _venue(text: str) -> str:
    from recommender.core.errors import InvalidInput
    from recommender.corpus.openreview import check_venue_id

    try:
        return check_venue_id(text)
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _cluster_address(value: str) -> str:
    from recommender.core.config import Settings
    from recommender.core.errors import InvalidInput

    try:
        return str(Settings.check("embed_cluster", value))
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(exc.message.split(": ", 1)[-1]) from None


def _method_list(text: str) -> list[str]:
    from recommender.evaluation.methods import METHOD_NAMES

    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in METHOD_NAMES]
    if unknown or not names:
        problem = f"unknown method {unknown[0]!r}" if unknown else "no method named"
        raise argparse.ArgumentTypeError(f"{problem}; choose from {','.join(METHOD_NAMES)}")
    return list(dict.fromkeys(names))


def _variant_pair(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if len(names) != 2 or not all(names):
        raise argparse.ArgumentTypeError(f"expected two names A,B such as hybrid,popular; "
                                         f"got {text!r}")
    return names


def _chance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a chance from 0 to below 1, such as 0.3; "
                                         f"got {text!r}")
    return value


def _index_kind(text: str) -> str:
    from recommender.evaluation.methods import INDEX_KINDS

    if text not in INDEX_KINDS:
        raise argparse.ArgumentTypeError(f"{text!r} is no index kind; choose from "
                                         f"{', '.join(INDEX_KINDS)}")
    return text


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:  # NaN fails too
        raise argparse.ArgumentTypeError(
            f"expected a fraction between 0 and 1 (exclusive), such as 0.2; got {text!r}")
    return value


def _answer_counts(text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() and 1 <= int(part) <= MAX_ONBOARDING_ANSWERS for part in parts):
        raise argparse.ArgumentTypeError(
            f"expected numbers of answers from 1 to {MAX_ONBOARDING_ANSWERS} separated by "
            f"commas, such as 5,10; got {text!r}")
    return sorted({int(part) for part in parts})


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"seconds between 0 and 86400, got {text!r}")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more; got {text!r}")
    return int(text)


def _day(text: str) -> str:
    try:
        if len(text) == 10:
            return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"not a date written YYYY-MM-DD: {text!r}")


def _iso_time(value: str) -> float:
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO time like 2026-11-30T07:00: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()

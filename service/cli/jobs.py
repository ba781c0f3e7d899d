"""`paperrec rebuild-index`, `train`, `digest`, `sync-zotero` and `jobs`, the schedule that
runs them all."""

from __future__ import annotations

import argparse
import fcntl
import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from recommender import wiring
from recommender.core.config import Settings

from .corpus import print_rejection

log = logging.getLogger("paperrec.jobs")


def rebuild_index(args: argparse.Namespace, settings: Settings) -> int:
    summary = wiring.build(settings).rebuild_index(
        full=args.full, if_changed=args.if_changed, cluster=args.cluster,
        progress=not args.quiet)
    print(f"rebuild-index: {summary}")
    return 0


def train(args: argparse.Namespace, settings: Settings) -> int:
    summary = wiring.build(settings).train(if_changed=args.if_changed, progress=not args.quiet)
    print(f"train: {summary}")
    return 0


def digest(args: argparse.Namespace, settings: Settings) -> int:
    now = args.now if args.now is not None else time.time()
    summary = wiring.build(settings).send_digests(now, only_user=args.user,
                                                  dry_run=args.dry_run, progress=not args.quiet)
    print(f"digest: {summary}")
    return 1 if summary.failed else 0


def sync_zotero(args: argparse.Namespace, settings: Settings) -> int:
    """One line per library synced; status 1 when one could not be synced at all."""
    app = wiring.build(settings)
    now = time.time()
    zotero = app.zotero
    results = ([(args.user, zotero.sync(args.user, now, args.budget))] if args.user
               else zotero.sync_all(now, args.budget))
    synced = failed = 0
    for user_id, summary in results:
        print(f"sync-zotero: {user_id}: {summary}", flush=True)
        synced += 1
        failed += summary.error is not None
    if not synced:
        print("sync-zotero: no Zotero library is connected (PUT /v1/users/<user>/zotero, or "
              "the Library page, connects one)")
    app.close()
    return 1 if failed else 0


def schedule(args: argparse.Namespace, settings: Settings) -> int:
    """Rounds of the scheduled jobs until SIGTERM (the round under way is finished first;
    every step publishes atomically, so a harder stop loses nothing either)."""
    stop = threading.Event()

    def on_term(_signal: int, _frame: FrameType | None) -> None:
        log.info("stopping after the step under way")
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    app = wiring.build(settings)
    with _only_one(settings.data_dir / "jobs.lock"):
        while True:
            outcomes = app.scheduled_round(time.time(), print_rejection)
            for outcome in outcomes:
                print(f"jobs: {outcome}", flush=True)
            failed = any(outcome.status == "failed" for outcome in outcomes)
            if args.once:
                return 1 if failed else 0
            if stop.wait(settings.jobs_interval_seconds):
                return 0


@contextmanager
def _only_one(path: Path) -> Iterator[None]:
    """One `paperrec jobs` a data directory: a second one waits until the first stops (the
    lock is the kernel's, released when its process ends however it ends)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"jobs: another `paperrec jobs` holds {path}; waiting for it to stop",
                  file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield

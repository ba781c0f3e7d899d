"""The latest online figures, kept as one small file so reading them costs nothing.

``report`` reads the whole window of the impression log: cheap for a day of a small
deployment, seconds to minutes for a week of a large one. Prometheus scrapes every 15 to 60
seconds and the admin page is opened at will, so neither computes the figures: the export step
(``paperrec export-events``, a step of every ``paperrec jobs`` round) writes the report of the
last ``WINDOW_DAYS`` days to ``<data dir>/events/report-latest.json`` once it has moved the
stream into the daily files, and ``/metrics`` and ``/admin/online`` read that file (parsed once
per change of the file, per process). Every worker of a gunicorn server reads the same file,
so each answers the same figures.

When the file is missing (a deployment that never exported) the reader computes it once and
writes it: nothing was exported then, so the log is the Redis stream alone, which
PAPERREC_EVENTS_STREAM_MAX bounds. When it is older than PAPERREC_ONLINE_FIGURES_SECONDS
(5 minutes; a deployment may serve without running ``paperrec jobs``) the reader still
answers with it, and one worker of the machine computes the next in a background thread
(``refresh_in_background``: one thread a process, one process at a time by a lock file), so
no scrape or page view ever waits on the log. Its ``written_at`` says when the figures were
made (``paperrec_online_figures_timestamp_seconds``).

The running experiment's verdict is over the whole experiment, not the window: an experiment
that has run for three weeks is judged on three weeks of lists.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recommender.storage.versions import write_atomically

WINDOW_DAYS = 7
FILE = "report-latest.json"

_cache: dict[Path, tuple[int, dict[str, Any]]] = {}
_lock = threading.Lock()
_refreshing: set[Path] = set()
log = logging.getLogger(__name__)


def snapshot_path(folder: Path) -> Path:
    return folder / FILE


def write_snapshot(folder: Path, report: dict[str, Any], written_at: float) -> Path:
    """Write the report (``Report.to_dict()``) as the latest figures, atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    path = snapshot_path(folder)
    data = json.dumps({**report, "written_at": written_at, "window_days": WINDOW_DAYS},
                      separators=(",", ":")).encode("utf-8")
    write_atomically(path, lambda handle: handle.write(data))
    return path


def read_snapshot(folder: Path) -> dict[str, Any] | None:
    """The latest figures written, or None when there are none (parsed again only when the
    file changed)."""
    path = snapshot_path(folder)
    try:
        stamp = os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return None
    with _lock:
        cached = _cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):  # replaced or half-copied: as if missing
        return None
    with _lock:
        _cache[path] = (stamp, found)
    return found


def refresh_in_background(folder: Path, write: Callable[[], object]) -> bool:
    """Run ``write`` (which writes the next figures) in a daemon thread, unless this process
    or another one is already at it; whether it started."""
    with _lock:
        if folder in _refreshing:
            return False
        _refreshing.add(folder)

    def run() -> None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / ".report-latest.lock").open("a") as held:
                try:
                    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:  # another process is computing them
                    return
                write()
        except Exception:  # noqa: BLE001 (the figures stay as they were; said in the log)
            log.warning("the online figures could not be computed", exc_info=True)
        finally:
            with _lock:
                _refreshing.discard(folder)

    threading.Thread(target=run, name="paperrec-online-figures", daemon=True).start()
    return True


class ExportedFigures:
    """What the export step did: the events moved to the daily files, the figures written."""

    def __init__(self, summary: object, path: Path) -> None:
        self.summary = summary
        self.path = path

    def __str__(self) -> str:
        return f"{self.summary}; figures of the last {WINDOW_DAYS} days in {self.path}"

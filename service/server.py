"""Run the app under gunicorn from Python (what `paperrec serve` does)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

import faiss
from gunicorn import util
from gunicorn.app.base import BaseApplication
from prometheus_client import multiprocess
from threadpoolctl import threadpool_limits

from recommender.core.config import Settings

from .app import create_app
from .metrics import MULTIPROC_ENV
from .state import EXTENSION


def _write_json_error(sock: socket.socket, status: int, reason: str, message: str) -> None:
    """Gunicorn's own errors (an oversized or malformed request line) in our JSON shape."""
    if status == 414:
        message = (f"{message}: the URL is too long; user and paper ids are at most 128 "
                   f"characters")
    code = reason.lower().replace(" ", "_")
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    util.write_nonblock(sock, head.encode("latin1") + body)


# Gunicorn answers requests it cannot parse itself, before Flask sees them; without this its
# answer would be an HTML page where every other error of the API is JSON.
util.write_error = _write_json_error


class _Gunicorn(BaseApplication):
    def __init__(self, settings: Settings, options: dict[str, Any]) -> None:
        self.settings = settings
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        # Each worker builds its own app after the fork: its own Redis and index handles.
        # One thread per request: a worker answers several requests at once on its own
        # threads, and BLAS or FAISS (OpenMP) pools on top of those oversubscribe the cores
        # (measured: a 100-like reading list at 100k papers took 73 ms with the pools and
        # 15 ms without, on 2 busy cores).
        threadpool_limits(1)
        faiss.omp_set_num_threads(1)
        app = create_app(self.settings)
        # Load the embedding model before the worker takes requests; otherwise the first
        # search a worker answers waits seconds for it.
        app.extensions[EXTENSION].embedder.encode(["warm up"])
        return app


def run(settings: Settings, host: str, port: int, workers: int, threads: int) -> None:
    metrics_dir, made = _metrics_dir()
    master = os.getpid()
    try:
        _Gunicorn(settings, {
            "bind": f"{host}:{port}",
            "workers": workers,
            "threads": threads,
            "worker_class": "gthread",
            "timeout": 120,
            "accesslog": None,
            # gunicorn 27's control socket lives at one path per user ($HOME/.gunicorn):
            # services side by side (or tests) would take each other's.
            "control_socket_disable": True,
            "child_exit": _child_exit,
        }).run()
    finally:
        # Workers are forked in run() and leave through here too; only the master cleans up.
        if made and os.getpid() == master:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _metrics_dir() -> tuple[Path, bool]:
    """The directory the workers share their metrics in, empty, named in the environment.

    ``$PROMETHEUS_MULTIPROC_DIR`` when set (its files from an earlier run are removed: the
    counts start again with the server), else a fresh temporary directory removed at exit.
    Returns the directory and whether it was made here. Set before the workers fork, so every
    worker inherits it.
    """
    given = os.environ.get(MULTIPROC_ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
        return path, False
    path = Path(tempfile.mkdtemp(prefix="paperrec-metrics-"))
    os.environ[MULTIPROC_ENV] = str(path)
    return path, True


def _child_exit(server: Any, worker: Any) -> None:
    # A worker that exits (or is restarted) leaves its counts in the sum, not its gauges.
    multiprocess.mark_process_dead(worker.pid)

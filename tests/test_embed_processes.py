"""Embedding in worker processes (PAPERREC_EMBED_PROCESSES): the vectors of the in-process
path, in the texts' order; a dead worker is an error that says what to do; Ctrl-C or an error
leaves no worker behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recommender import jobs
from recommender.core.config import DEFAULT_MODEL
from recommender.core.errors import EmbeddingFailed
from recommender.core.papers import Paper
from recommender.corpus.formats import read_papers
from recommender.embedding import processes
from recommender.embedding.cache import EmbeddingCache, embed_into_cache
from recommender.embedding.encoders import Embedder
from recommender.embedding.processes import EmbeddingProcesses

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(DEFAULT_MODEL, backend="onnx-int8",
                    export_dir=tmp_path_factory.mktemp("exports"))


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    """Texts of every length, titles to whole abstracts: the sample abstracts, and each
    one's first sentence and first few words."""
    sample = [p.text for path in jobs.sample_files() for p in read_papers(path)
              if isinstance(p, Paper)]
    texts = sample + [t.split(". ")[0] for t in sample] + [" ".join(t.split()[:6]) for t in sample]
    return {f"hash-{n}": text for n, text in enumerate(dict.fromkeys(texts))}


@pytest.fixture(autouse=True)
def few_texts_are_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers start for these texts, fewer than a rebuild would start them for."""
    monkeypatch.setattr(processes, "MIN_CHARACTERS", 1)


def _workers(pool: EmbeddingProcesses) -> list[int]:
    return [process.pid for process in pool.pool._processes.values()]


def test_the_processes_give_the_in_process_vectors_in_order(
    embedder: Embedder, texts: dict[str, str], tmp_path: Path
) -> None:
    assert len(texts) > 100
    here, there = EmbeddingCache(tmp_path / "here.sqlite"), EmbeddingCache(tmp_path / "p.sqlite")
    embed_into_cache(embedder, here, texts, progress=False, chunk=50, processes=1)
    embed_into_cache(embedder, there, texts, progress=False, chunk=50, processes=2)
    hashes = list(texts)
    expected, got = here.get(embedder.variant, hashes), there.get(embedder.variant, hashes)
    assert set(got) == set(hashes)
    for h in hashes:
        np.testing.assert_allclose(got[h], expected[h], atol=1e-5)
    # And chunk by chunk, straight from the pool: each chunk's rows in its texts' order.
    chunks = [list(texts.values())[start : start + 40] for start in range(0, len(texts), 40)]
    with EmbeddingProcesses(embedder, 2) as pool:
        for chunk, vectors in zip(chunks, pool.encode_chunks(chunks), strict=True):
            np.testing.assert_allclose(vectors, embedder.encode(chunk), atol=1e-5)
        assert len(_workers(pool)) == 2


def test_a_few_texts_are_embedded_in_process(
    embedder: Embedder, texts: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "MIN_CHARACTERS", sum(map(len, texts.values())) + 1)
    monkeypatch.setattr(EmbeddingProcesses, "__init__", None)  # starting one would fail
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    embed_into_cache(embedder, cache, texts, progress=False, processes=2)
    assert len(cache.get(embedder.variant, list(texts))) == len(texts)


def test_a_worker_that_dies_stops_the_embedding_with_what_to_do(
    embedder: Embedder, texts: dict[str, str]
) -> None:
    with EmbeddingProcesses(embedder, 2) as pool:
        list(pool.encode_chunks([list(texts.values())[:20]]))
        os.kill(_workers(pool)[0], signal.SIGKILL)
        with pytest.raises(EmbeddingFailed, match="PAPERREC_EMBED_PROCESSES=1"):
            list(pool.encode_chunks([list(texts.values())]))


def test_an_error_while_storing_stops_the_workers_and_keeps_what_was_stored(
    embedder: Embedder, texts: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    pools: list[EmbeddingProcesses] = []
    workers: list[multiprocessing.Process] = []
    real_init, real_put = EmbeddingProcesses.__init__, cache.put

    def init(self: EmbeddingProcesses, *args: Any) -> None:
        real_init(self, *args)
        pools.append(self)

    def put_then_fail(model: str, hashes: list[str], vectors: np.ndarray) -> None:
        real_put(model, hashes, vectors)
        workers.extend(pools[0].pool._processes.values())
        raise KeyboardInterrupt  # as Ctrl-C after the first chunk

    monkeypatch.setattr(EmbeddingProcesses, "__init__", init)
    monkeypatch.setattr(cache, "put", put_then_fail)
    with pytest.raises(KeyboardInterrupt):
        embed_into_cache(embedder, cache, texts, progress=False, chunk=50, processes=2)
    assert len(cache.get(embedder.variant, list(texts))) == 50
    assert workers and not any(worker.is_alive() for worker in workers)


CTRL_C = """
import signal
import sys
from pathlib import Path
# As in a terminal. A background job of a shell without job control (nohup ... &) starts
# with Ctrl-C ignored, and Python then never raises KeyboardInterrupt.
signal.signal(signal.SIGINT, signal.default_int_handler)
from recommender.core.config import DEFAULT_MODEL
from recommender.embedding.cache import EmbeddingCache, embed_into_cache
from recommender.embedding.encoders import Embedder
texts = {str(n): f"paper {n}: " + "a long abstract about attention " * 40 for n in range(2000)}
embed_into_cache(Embedder(DEFAULT_MODEL, export_dir=Path(sys.argv[1])),
                 EmbeddingCache(Path(sys.argv[2])), texts, progress=False, processes=2)
"""


def test_ctrl_c_stops_the_run_and_its_workers(embedder: Embedder, tmp_path: Path) -> None:
    """As in a terminal: SIGINT to the whole process group."""
    embedder.encode(["export the model first"])
    assert embedder.export_dir is not None
    run = subprocess.Popen(
        [sys.executable, "-c", CTRL_C, str(embedder.export_dir), str(tmp_path / "e.sqlite")],
        cwd=ROOT, start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        workers: list[str] = []
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
            workers = subprocess.run(["pgrep", "-P", str(run.pid)], capture_output=True,
                                     text=True).stdout.split()
        assert len(workers) >= 2, "the workers did not start"
        time.sleep(2)  # the workers are embedding
        os.killpg(run.pid, signal.SIGINT)
        _, errors = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode != 0 and "KeyboardInterrupt" in errors
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers), "a worker was left"

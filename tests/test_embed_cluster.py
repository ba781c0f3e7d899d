"""rebuild-index on a Dask cluster: a real LocalCluster of two worker processes (one thread
each) started here. The workers run the real model, so these tests are marked ``model``,
except the unreachable scheduler's, which embeds nothing.

They run the ``onnx`` backend: its vectors do not depend on which texts share a batch, so
shards of four give the vectors of a local rebuild. (``onnx-int8`` quantises activations per
batch: its vectors equal the local ones when the shards are the local chunks, the default
PAPERREC_EMBED_SHARD_SIZE, and are within its usual noise otherwise.)"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from distributed import Client, LocalCluster, WorkerPlugin

from recommender import jobs, wiring
from recommender.core.config import Settings
from recommender.core.errors import ClusterUnavailable
from recommender.corpus.store import CorpusStore
from recommender.embedding.cache import EmbeddingCache
from recommender.embedding.cluster import SHARD_KEY
from recommender.index.store import IndexStore
from replay.server import free_port
from service.cli import main

SHARD = 4  # texts per shard: the 38 sample papers make 10 shards
BACKEND = "onnx"


class ShardWatch(WorkerPlugin):
    """On every worker: logs each shard a worker starts (its number, a line in ``log``), and
    kills the worker process as it starts a shard: shard ``kill`` every time, or when
    ``kill`` is None the first shard any worker starts, once (its number in ``log.killed``).
    A worker that dies also loses the shards it finished and has not yet handed over (the
    kill stops its event loop at once), so "only that shard" is shown on a worker's first."""

    name = "shard-watch"

    def __init__(self, log: Path, kill: int | None) -> None:
        self.log, self.kill = str(log), kill

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "executing" or not str(key).startswith(SHARD_KEY):
            return
        number = int(str(key).rsplit("-", 1)[1])
        with open(self.log, "a") as log:
            log.write(f"{number}\n")
        if self.kill is None:
            try:
                flag = os.open(f"{self.log}.killed", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.write(flag, str(number).encode())
            os.close(flag)
        elif number != self.kill:
            return
        os._exit(1)  # a worker dying mid-shard: no exception, no goodbye to the scheduler


# A killed worker's nanny starts a new process, which imports the model's stack again: about
# ten seconds on an idle machine, over a minute seen on a loaded one.
WORKERS_BACK_SECONDS = 240


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as local:
        yield local


@pytest.fixture
def client(cluster: LocalCluster) -> Iterator[Client]:
    """A client of the test's own, to watch the workers: both are up before and after."""
    with Client(cluster) as watcher:
        watcher.wait_for_workers(2, timeout=WORKERS_BACK_SECONDS)
        yield watcher
        with contextlib.suppress(ValueError):  # the test's plugin, if it left one
            watcher.unregister_worker_plugin(ShardWatch.name)
        watcher.wait_for_workers(2, timeout=WORKERS_BACK_SECONDS)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The sample papers embedded and indexed in this process, on BACKEND."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("local"), embed_backend=BACKEND)
    app = wiring.build(settings)
    app.ingest(jobs.sample_files(), on_rejection=print)
    app.rebuild_index(progress=False)
    return settings


def _fresh(settings: Settings, cluster: LocalCluster) -> Settings:
    wiring.build(settings).ingest(jobs.sample_files(), on_rejection=print)
    return settings.replace(embed_cluster=cluster.scheduler_address, embed_shard_size=SHARD,
                            embed_backend=BACKEND)


def _rebuild(settings: Settings) -> jobs.RebuildSummary:
    return wiring.build(settings).rebuild_index(progress=False)


def _vectors(settings: Settings) -> dict[str, np.ndarray]:
    """Every cached vector of the configured variant, by content hash."""
    hashes = [h for _, h, _ in CorpusStore(settings.corpus_path).index_rows()]
    variant = wiring.configured_embedder(settings).variant
    cache = EmbeddingCache(settings.embedding_cache_path)
    try:
        return cache.get(variant, hashes)
    finally:
        cache.close()


def _same_vectors(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert got.keys() == want.keys()
    for h in want:
        np.testing.assert_allclose(got[h], want[h], atol=1e-5)


@pytest.mark.model
def test_the_cluster_makes_the_vectors_and_index_of_a_local_rebuild(
    settings: Settings, cluster: LocalCluster, client: Client, local: Settings,
) -> None:
    settings = _fresh(settings, cluster)
    summary = _rebuild(settings)
    assert (summary.papers, summary.embedded) == (38, 38)
    _same_vectors(_vectors(settings), _vectors(local))
    ours, theirs = (IndexStore(s.index_dir) for s in (settings, local))
    ours_index, theirs_index = (store.load(str(store.current_version()))
                                for store in (ours, theirs))
    assert ours_index.ids == theirs_index.ids
    np.testing.assert_allclose(ours_index.vectors, theirs_index.vectors, atol=1e-5)
    probe = theirs_index.vectors[:5]
    assert (ours_index.search(probe, 3)[0] == theirs_index.search(probe, 3)[0]).all()


@pytest.mark.model
def test_a_worker_dying_mid_shard_costs_only_that_shard(
    settings: Settings, cluster: LocalCluster, client: Client, local: Settings,
    tmp_path: Path,
) -> None:
    log = tmp_path / "shards.log"
    client.register_plugin(ShardWatch(log, kill=None))
    settings = _fresh(settings, cluster)
    summary = _rebuild(settings)
    killed = int((tmp_path / "shards.log.killed").read_text())
    assert summary.embedded == 38
    starts = Counter(int(line) for line in log.read_text().split())
    assert starts == {**{n: 1 for n in range(10)}, killed: 2}, "the lost shard alone reruns"
    _same_vectors(_vectors(settings), _vectors(local))


@pytest.mark.model
def test_a_rerun_after_a_failed_run_embeds_only_the_shards_left(
    settings: Settings, cluster: LocalCluster, client: Client, local: Settings,
    tmp_path: Path,
) -> None:
    settings = _fresh(settings, cluster)
    client.register_plugin(ShardWatch(tmp_path / "shards.log", kill=9))
    allowed = cluster.scheduler.allowed_failures
    cluster.scheduler.allowed_failures = 0  # the first worker death fails the shard
    try:
        with pytest.raises(ClusterUnavailable, match="run rebuild-index again"):
            _rebuild(settings)
    finally:
        cluster.scheduler.allowed_failures = allowed
    client.unregister_worker_plugin(ShardWatch.name)
    kept = len(_vectors(settings))
    assert 0 < kept <= 38 - SHARD and kept % SHARD == 0, kept
    summary = _rebuild(settings)
    assert summary.embedded == 38 - kept
    _same_vectors(_vectors(settings), _vectors(local))


@pytest.mark.parametrize("given_by", ["flag", "setting", "flag over setting"])
def test_an_unreachable_scheduler_is_one_line_and_exit_2(
    given_by: str, sample_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "data"
    # The cache holds the hashing embedder's vectors: the configured model's are all missing.
    shutil.copytree(sample_build, data)
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(data))
    monkeypatch.setenv("PAPERREC_EMBED_CLUSTER_TIMEOUT", "1")
    address, other = (f"tcp://127.0.0.1:{free_port()}" for _ in range(2))
    command = ["rebuild-index", "--quiet"]
    if given_by != "flag":
        monkeypatch.setenv("PAPERREC_EMBED_CLUSTER", other if "over" in given_by else address)
    if given_by != "setting":
        command += ["--cluster", address]
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"paperrec rebuild-index: cannot reach the Dask scheduler at "
                          f"{address} within 1 s")

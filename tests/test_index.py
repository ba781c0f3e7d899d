"""PaperIndex versions: atomic publish, hot reload, bad versions, exact vs approximate."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from recommender.core.errors import IndexNotReady, NotFound
from recommender.index.store import IndexStore, LiveIndex


def random_unit(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def ids(n: int, prefix: str = "p") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def no_days(n: int) -> np.ndarray:
    return np.full(n, np.nan)


def test_exact_index_returns_the_brute_force_answer(tmp_path: Path) -> None:
    vectors = random_unit(500)
    index = IndexStore(tmp_path).publish(ids(500), vectors, no_days(500), "m", exact_max=1000)
    space = index.vectors
    rows, scores = index.search(space[:5], 10)
    expected = np.argsort(-(space[:5] @ space.T), axis=1)[:, :10]
    assert (rows == expected).all()
    assert np.allclose(scores[:, 0], 1.0, atol=1e-5)
    assert index.meta["kind"] == "exact"


def test_approximate_index_above_the_threshold_finds_most_true_neighbours(tmp_path: Path) -> None:
    vectors = random_unit(3000, seed=1)
    queries = random_unit(50, seed=2)
    index = IndexStore(tmp_path).publish(ids(3000), vectors, no_days(3000), "m", exact_max=1000)
    assert index.meta["kind"] == "hnsw"
    rows, _ = index.search(queries, 20)
    truth = np.argsort(-(queries @ index.vectors.T), axis=1)[:, :20]
    recall = np.mean([len(set(r) & set(t)) / 20 for r, t in zip(rows, truth, strict=True)])
    assert recall >= 0.95


def test_published_versions_load_back_and_old_ones_are_pruned(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    for i in range(5):
        store.publish(ids(10, prefix=f"v{i}-"), random_unit(10, seed=i), no_days(10), "m",
                      exact_max=100)
    assert store.current_version() == "000005"
    assert sorted(p.name for p in store.dir.versions.iterdir()) == ["000003", "000004", "000005"]
    loaded = store.load("000005")
    assert loaded.ids[0] == "v4-0" and loaded.model == "m"
    published = store.publish(ids(10), random_unit(10, seed=4), no_days(10), "m", exact_max=100)
    assert np.allclose(store.load(published.version).vectors, published.vectors)


def test_live_index_switches_to_a_new_version_without_restart(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    live = LiveIndex(store, check_seconds=0)
    with pytest.raises(IndexNotReady, match="rebuild-index"):
        live.get()
    store.publish(ids(10), random_unit(10), no_days(10), "m", exact_max=100)
    first = live.get()
    assert first.version == "000001"
    store.publish(ids(20), random_unit(20), no_days(20), "m", exact_max=100)
    assert live.get().version == "000002" and len(live.get()) == 20
    # A request that started on the old version can finish on it.
    assert len(first.search(first.vectors[:1], 5)[0][0]) == 5


def test_a_corrupt_new_version_leaves_the_old_one_serving(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    live = LiveIndex(store, check_seconds=0)
    store.publish(ids(10), random_unit(10), no_days(10), "m", exact_max=100)
    assert live.get().version == "000001"
    store.publish(ids(10), random_unit(10), no_days(10), "m", exact_max=100)
    (store.dir.versions / "000002" / "index.faiss").write_bytes(b"not an index")
    assert live.get().version == "000001"
    # A fresh process with only the corrupt version is not ready, and says why.
    (store.dir.versions / "000001" / "meta.json").write_text(json.dumps({"broken": True}))
    fresh = LiveIndex(store, check_seconds=0)
    with pytest.raises(IndexNotReady, match="000002 cannot be loaded"):
        fresh.get()


def test_requests_in_flight_never_fail_while_versions_are_published(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    store.publish(ids(200), random_unit(200), no_days(200), "m", exact_max=1000)
    live = LiveIndex(store, check_seconds=0)
    failures: list[BaseException] = []
    served: set[str] = set()  # the versions requests were answered from
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                index = live.get()
                rows, _ = index.search(index.vectors[:3], 10)
                assert (rows >= 0).all()
                index.row(index.ids[-1])
                served.add(index.version)
            except BaseException as exc:  # noqa: BLE001 - every failure counts
                failures.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for i in range(8):
        store.publish(ids(200 + i), random_unit(200 + i, seed=i), no_days(200 + i), "m",
                      exact_max=1000)
    done.set()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(served) >= 2  # the readers were at work while new versions came
    assert live.get().version == "000009"


def test_an_unknown_paper_is_not_found(tmp_path: Path) -> None:
    index = IndexStore(tmp_path).publish(ids(3), random_unit(3), no_days(3), "m", exact_max=100)
    with pytest.raises(NotFound, match="rebuild-index"):
        index.row("nope")


def test_a_build_that_may_overwrite_its_vectors_builds_the_same_space(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from recommender.index import content_space

    raw = random_unit(1500, seed=5) * 3 + 0.5  # uncentred and not of unit length
    kept = raw.copy()
    plain, _ = content_space.build_indexed_space(raw, exact_max=1000)
    assert np.array_equal(raw, kept)  # by default the caller's vectors are left alone
    # Searched a few rows at a time for their neighbours, as a million papers are.
    monkeypatch.setattr(content_space, "SEARCH_CHUNK", 64)
    given = raw.copy()
    frugal, _ = content_space.build_indexed_space(given, exact_max=1000, overwrite=True)
    assert np.shares_memory(frugal.vectors, given)  # no copy of its own
    assert np.allclose(frugal.vectors, plain.vectors, atol=1e-6)
    assert np.allclose(frugal.mean, plain.mean)
    for name in ("neighbours", "augment_neighbours"):
        same = (getattr(frugal, name) == getattr(plain, name)).mean()
        assert same > 0.99, name  # the same graphs (HNSW builds may differ in a tie or two)


def test_an_hnsw_build_finds_its_graphs_in_the_one_graph_it_builds() -> None:
    """Above the exact limit a full build makes one HNSW graph: the augmentation lists come
    from its links (scored exactly), the stored lists from searching it once it serves the
    augmented vectors. Both must hold nearly all of the true nearest papers."""
    from recommender.index import content_space

    rng = np.random.default_rng(3)
    centres = rng.normal(size=(60, 32))
    raw = (centres[rng.integers(0, 60, 4000)] + 0.6 * rng.normal(size=(4000, 32)) + 2.0)
    space, index = content_space.build_indexed_space(raw.astype(np.float32), exact_max=1000)
    assert hasattr(index, "hnsw") and index.ntotal == 4000
    centred = raw - raw.mean(axis=0)
    centred /= np.linalg.norm(centred, axis=1, keepdims=True)

    def recall(vectors: np.ndarray, rows: np.ndarray, k: int) -> float:
        sims = vectors @ vectors.T
        np.fill_diagonal(sims, -np.inf)
        truth = np.argsort(-sims, axis=1)[:, :k]
        return float(np.mean([len(set(t) & set(r)) / k for t, r in zip(truth, rows, strict=True)]))

    assert space.augment_neighbours is not None
    for rows in (space.augment_neighbours, space.neighbours):
        assert (rows != np.arange(4000)[:, None]).all()  # never a paper itself
        assert all(len(set(r)) == len(r) for r in rows)  # nor one twice
    assert recall(centred, space.augment_neighbours, content_space.AUGMENT_NEIGHBOURS) >= 0.95
    assert recall(space.vectors, space.neighbours, content_space.STORED_NEIGHBOURS) >= 0.95
    # The served index holds the augmented vectors (it was built over the centred ones).
    scores, found = index.search(space.vectors[:50], 5)
    expected = np.einsum("qd,qkd->qk", space.vectors[:50], space.vectors[found])
    assert np.allclose(scores, expected, atol=1e-5)
    assert (found == np.arange(50)[:, None]).any(axis=1).mean() >= 0.95

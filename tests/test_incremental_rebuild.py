"""Incremental index builds: adding a few papers extends the previous version instead of
rebuilding it, with the same answer as a full build where it claims to be exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recommender.index.store
from recommender.core.config import Settings
from recommender.index.content_space import build_content_space, centre_query
from recommender.index.paper_index import PaperIndex
from recommender.index.store import MAX_ADDED_FRACTION, IndexStore
from recommender.ranking.context import RankingContext
from recommender.ranking.rank import rank
from recommender.ranking.request import ListRequest
from service.cli import main

DIM = 32


def clustered(n: int, seed: int, clusters: int = 40) -> np.ndarray:
    """Raw embeddings like real ones: an offset (a common direction) and topic clusters."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, DIM))
    points = centres[rng.integers(0, clusters, n)] + 1.5 * rng.normal(size=(n, DIM))
    return (points + 3.0).astype(np.float32)


def names(n: int, prefix: str = "p") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def hashes_of(ids: list[str]) -> list[str]:
    return [f"h-{pid}" for pid in ids]


def publish(store: IndexStore, ids: list[str], raw: np.ndarray, exact_max: int = 100_000,
            **kwargs: Any) -> PaperIndex:
    return store.publish(ids, raw, np.full(len(ids), np.nan), "m", exact_max,
                         hashes=kwargs.pop("hashes", hashes_of(ids)), **kwargs)


def corpus_with_new(n_old: int = 2000, n_new: int = 20) -> tuple[list[str], np.ndarray]:
    """Old papers, then 1% new ones; new0 is a near-duplicate of old paper p7."""
    raw = clustered(n_old + n_new, seed=3)
    raw[n_old] = raw[7] + 0.01
    return names(n_old) + names(n_new, "new"), raw


def test_one_percent_new_papers_get_the_neighbours_a_full_build_gives(tmp_path: Path) -> None:
    ids, raw = corpus_with_new()
    store = IndexStore(tmp_path / "index")
    first = publish(store, ids[:2000], raw[:2000])
    assert first.meta["build"] == "full"
    index = publish(store, ids, raw)
    assert index.meta["build"] == "incremental", index.meta["build_reason"]
    assert index.ids == ids  # old papers keep their rows; new ones come after
    assert np.array_equal(index.space.mean, first.space.mean)  # the mean is kept

    # Exact for the new papers (and every augmented vector), given the kept mean.
    same_mean = build_content_space(raw, 100_000, mean=first.space.mean)
    assert np.allclose(index.vectors, same_mean.vectors, atol=1e-5)
    assert np.array_equal(index.space.neighbours[2000:], same_mean.neighbours[2000:])
    assert np.allclose(index.space.neighbour_sims[2000:], same_mean.neighbour_sims[2000:],
                       atol=1e-5)
    # Old papers' lists: a documented approximation, close to the full build's.
    overlap = np.mean([len(set(a) & set(b)) / len(a) for a, b in
                       zip(index.space.neighbours, same_mean.neighbours, strict=True)])
    assert overlap >= 0.97
    # And against a real full build (which recomputes the mean): nearly the same too.
    full = publish(IndexStore(tmp_path / "full"), ids, raw, full=True)
    assert full.meta["build"] == "full"
    overlap = np.mean([len(set(a) & set(b)) / len(a) for a, b in
                       zip(index.space.neighbours[2000:], full.space.neighbours[2000:],
                           strict=True)])
    assert overlap >= 0.9

    # It is what was published, and it loads back the same.
    loaded = store.load(index.version)
    assert loaded.meta["build"] == "incremental" and loaded.ids == ids
    assert np.array_equal(loaded.space.neighbours, index.space.neighbours)


def test_search_similar_and_recommendations_find_the_new_papers(tmp_path: Path) -> None:
    ids, raw = corpus_with_new()
    store = IndexStore(tmp_path)
    publish(store, ids[:2000], raw[:2000])
    index = publish(store, ids, raw)
    assert index.meta["build"] == "incremental"
    new = np.arange(2000, 2020)
    rows, _ = index.search(index.vectors[new], 1)
    # Each new paper is found by its own vector; new0, a near-duplicate of p7, ties with it
    # in float32 (either may come first, with the order of the sums FAISS's threads take).
    assert (rows[1:, 0] == new[1:]).all() and rows[0, 0] in (new[0], 7)
    query = centre_query(raw[2005:2006] + 0.001, index.space.mean)
    assert index.search(query, 1)[0][0, 0] == 2005  # and by a search text's embedding
    # new0 is a near-duplicate of p7: it joins p7's neighbours, and a reader of p7 gets it.
    assert index.space.neighbours[7, 0] == 2000
    ctx = RankingContext(index.vectors, index.space.neighbours, index.space.neighbour_sims,
                         np.zeros(len(ids), np.float32), ids, None, None)
    assert 2000 in rank(ctx, ListRequest(np.array([7]), 3)).rows


def test_approximate_index_is_extended_and_finds_the_new_papers(tmp_path: Path) -> None:
    ids, raw = corpus_with_new()
    store = IndexStore(tmp_path)
    publish(store, ids[:2000], raw[:2000], exact_max=500)
    index = publish(store, ids, raw, exact_max=500)
    assert index.meta["kind"] == "hnsw" and index.meta["build"] == "incremental"
    vectors = np.asarray(index.vectors)
    truth = np.argsort(-(vectors[2000:] @ vectors.T), axis=1)[:, 1:21]
    recall = np.mean([len(set(a) & set(b)) / 20 for a, b in
                      zip(index.space.neighbours[2000:], truth, strict=True)])
    assert recall >= 0.9
    rows, scores = index.search(vectors, 1)
    assert np.mean(rows[:, 0] == np.arange(len(ids))) >= 0.99
    # Changed old vectors were refreshed in the index: its scores are the stored vectors'.
    assert np.allclose(scores[:, 0], 1.0, atol=1e-4)
    loaded = store.load(index.version)
    assert loaded.faiss_index.ntotal == len(ids)


@pytest.mark.parametrize("change, reason", [
    ("removed", "papers were removed"),
    ("changed", "papers changed"),
    ("too many", "added since the last full build"),
    ("model", "embedding model changed"),
    ("asked", "full build was asked for"),
])
def test_a_full_build_runs_when_an_extension_would_be_wrong(
    tmp_path: Path, change: str, reason: str
) -> None:
    ids, raw = corpus_with_new()
    store = IndexStore(tmp_path)
    publish(store, ids[:2000], raw[:2000])
    new_ids, new_raw, hashes = ids, raw, hashes_of(ids)
    kwargs: dict[str, Any] = {}
    if change == "removed":
        new_ids, new_raw, hashes = ids[1:], raw[1:], hashes[1:]
    elif change == "changed":
        hashes[5] = "edited abstract"
    elif change == "too many":
        extra = int(MAX_ADDED_FRACTION * 2000) + 1
        more = clustered(extra, seed=9)
        new_ids, new_raw = ids[:2000] + names(extra, "x"), np.concatenate([raw[:2000], more])
        hashes = hashes_of(new_ids)
    elif change == "model":
        kwargs["embedding"] = "another-model"
    else:
        kwargs["full"] = True
    index = publish(store, new_ids, new_raw, hashes=hashes, **kwargs)
    assert index.meta["build"] == "full" and reason in index.meta["build_reason"]
    assert index.ids == new_ids


def test_increments_add_up_to_at_most_the_allowed_fraction_before_a_full_build(
    tmp_path: Path,
) -> None:
    raw = clustered(2300, seed=4)
    ids = names(2300)
    store = IndexStore(tmp_path)
    publish(store, ids[:2000], raw[:2000])
    builds = [publish(store, ids[:n], raw[:n]).meta for n in (2100, 2200, 2300)]
    assert [b["build"] for b in builds] == ["incremental", "incremental", "full"]
    assert builds[1]["full_build_count"] == 2000 and builds[2]["full_build_count"] == 2300


def test_a_crash_during_an_incremental_publish_leaves_the_served_version_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids, raw = corpus_with_new()
    store = IndexStore(tmp_path)
    publish(store, ids[:2000], raw[:2000])
    real_save = np.save
    saved: list[str] = []

    def disk_full_on_the_third_array(path: Any, array: Any, *args: Any, **kw: Any) -> None:
        if len(saved) == 2:
            raise OSError(28, "No space left on device")
        saved.append(str(path))
        real_save(path, array, *args, **kw)

    monkeypatch.setattr(recommender.index.store.np, "save", disk_full_on_the_third_array)
    with pytest.raises(OSError, match="No space left"):
        publish(store, ids, raw)
    monkeypatch.undo()
    assert store.current_version() == "000001"
    assert sorted(p.name for p in store.dir.versions.iterdir()) == ["000001"]
    served = store.load("000001")
    assert len(served) == 2000
    assert json.loads((store.dir.path("000001") / "meta.json").read_text())["count"] == 2000
    retried = publish(store, ids, raw)
    assert retried.version == "000002" and retried.meta["build"] == "incremental"


def test_a_damaged_previous_version_means_a_full_build(tmp_path: Path) -> None:
    ids, raw = corpus_with_new()
    store = IndexStore(tmp_path)
    publish(store, ids[:2000], raw[:2000])
    (store.dir.path("000001") / "index.faiss").write_bytes(b"garbage")
    index = publish(store, ids, raw)
    assert index.meta["build"] == "full"
    assert "cannot be extended" in index.meta["build_reason"]


def test_a_version_records_how_long_each_step_of_its_build_took(tmp_path: Path) -> None:
    ids, raw = corpus_with_new()
    store = IndexStore(tmp_path / "index")
    full = publish(store, ids[:2000], raw[:2000])
    steps = ["centre", "augmentation graph", "blend", "faiss index", "neighbour graph", "write"]
    written = json.loads((store.dir.path(full.version) / "meta.json").read_text())
    assert list(written["phases"]) == steps
    assert all(p["seconds"] >= 0 and p["peak_rss_gib"] > 0 for p in written["phases"].values())
    extended = publish(store, ids, raw)
    written = json.loads((store.dir.path(extended.version) / "meta.json").read_text())
    assert list(written["phases"]) == ["previous version", "extension", "write"]


@pytest.mark.model
def test_rebuild_index_says_which_kind_ran_and_full_forces_a_full_one(
    model_sample_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(model_sample_settings.data_dir))
    assert main(["rebuild-index", "--quiet"]) == 0
    assert "incremental build (0 papers added" in capsys.readouterr().out
    # One paper more in 38 moves the mean too far (3%) to keep it: a full build, and why.
    papers = tmp_path / "more.jsonl"
    papers.write_text(json.dumps({"id": "new1", "title": "A new paper",
                                  "abstract": "On graph learning."}) + "\n")
    assert main(["ingest", str(papers)]) == 0
    assert main(["rebuild-index", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "39 papers, 1 newly embedded" in out and "full build (the corpus mean" in out
    assert main(["rebuild-index", "--quiet"]) == 0
    assert "incremental build (0 papers added" in capsys.readouterr().out
    assert main(["rebuild-index", "--quiet", "--full"]) == 0
    assert "full build (a full build was asked for)" in capsys.readouterr().out

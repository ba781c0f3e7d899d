"""CollaborativeModel on synthetic likes with a known answer: two groups with disjoint tastes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recommender.ranking.collaborative import DEFAULT_FACTORS, CollaborativeModel

A_ITEMS = [f"A{i}" for i in range(10)]
B_ITEMS = [f"B{i}" for i in range(10)]


def two_taste_groups(users_per_group: int = 40, seed: int = 0) -> dict[str, list[str]]:
    """Each user likes 7 of the 10 items of their own group and nothing of the other."""
    rng = np.random.default_rng(seed)
    likes: dict[str, list[str]] = {}
    for group, items in (("a", A_ITEMS), ("b", B_ITEMS)):
        for n in range(users_per_group):
            likes[f"{group}{n}"] = [str(item) for item in rng.choice(items, size=7, replace=False)]
    return likes


def fit(likes: dict[str, list[str]], seed: int = 0) -> CollaborativeModel:
    """The shipped defaults: they must find the known answer on small data too."""
    return CollaborativeModel.fit(likes, seed=seed)


@pytest.fixture(scope="module")
def model() -> CollaborativeModel:
    return fit(two_taste_groups())


def ranked_unliked(model: CollaborativeModel, liked: list[str]) -> list[str]:
    scores = model.scores_for(liked)
    order = np.argsort(-scores, kind="stable")
    return [model.item_ids[i] for i in order if model.item_ids[i] not in liked]


def test_withheld_items_of_the_users_taste_outrank_every_item_of_the_other_taste(
    model: CollaborativeModel,
) -> None:
    liked = ["A0", "A1", "A2", "A3", "A4"]
    scores = dict(zip(model.item_ids, model.scores_for(liked), strict=True))
    assert min(scores[f"A{i}"] for i in range(5, 10)) > max(scores[b] for b in B_ITEMS)
    ranking = ranked_unliked(model, liked)
    assert ranking[0].startswith("A") and ranking[0] not in liked
    assert set(ranking[:5]) == {"A5", "A6", "A7", "A8", "A9"}


def test_likes_of_a_user_absent_from_training_count_at_once(model: CollaborativeModel) -> None:
    assert "newcomer" not in model.user_ids
    ranking = ranked_unliked(model, ["B0", "B1"])
    assert set(ranking[:8]) == set(B_ITEMS) - {"B0", "B1"}


def test_scores_cover_every_item_as_float32(model: CollaborativeModel) -> None:
    scores = model.scores_for(["A0"])
    assert scores.shape == (20,) and scores.dtype == np.float32
    assert sorted(model.item_ids) == sorted(A_ITEMS + B_ITEMS)


def test_no_known_likes_give_all_zero_scores(model: CollaborativeModel) -> None:
    for liked in ([], ["unknown-1", "unknown-2"]):
        scores = model.scores_for(liked)
        assert scores.shape == (20,) and not scores.any()


def test_unknown_item_ids_are_ignored(model: CollaborativeModel) -> None:
    assert np.array_equal(model.scores_for(["A0", "nope", "A1"]), model.scores_for(["A0", "A1"]))


def test_fold_in_solves_the_als_equations_of_the_current_likes(model: CollaborativeModel) -> None:
    """implicit 0.7's confidence: a like weighs ``alpha`` (not ``1 + alpha``), every other cell
    1 with preference 0; so a user with likes ``L`` has the factor ``x`` of
    ``(YᵀY + regularization·I + (alpha - 1)·Y_Lᵀ Y_L) x = alpha · Σ_{i in L} y_i``, solved here
    in float64 (as paperrec did by hand before it called ``recalculate_user``)."""
    factors = model.item_factors.astype(np.float64)
    regularization, alpha = model.als.regularization, model.als.alpha
    gram = factors.T @ factors + regularization * np.eye(factors.shape[1])
    for liked in (["A0", "A1", "A2", "A3", "A4"], ["B3"], ["A0", "B0", "B5", "B5"]):
        rows = factors[sorted({model.item_ids.index(item) for item in liked})]
        user = np.linalg.solve(gram + (alpha - 1.0) * rows.T @ rows, alpha * rows.sum(axis=0))
        assert np.allclose(model.scores_for(liked), factors @ user, rtol=1e-4, atol=1e-5)


def test_item_likes_count_the_training_likes(model: CollaborativeModel) -> None:
    likes = two_taste_groups()
    for item_id, count in zip(model.item_ids, model.item_likes, strict=True):
        assert count == sum(item_id in liked for liked in likes.values())
    assert int(model.item_likes.sum()) == model.meta["n_likes"] == 80 * 7


def test_save_and_load_round_trip_without_pickle(model: CollaborativeModel, tmp_path: Path) -> None:
    folder = tmp_path / "cf"
    model.save(folder)
    assert {path.suffix for path in folder.iterdir()} == {".npz", ".npy", ".json"}
    assert not [path for path in folder.iterdir() if path.name.startswith(".")]
    with np.load(folder / "als.npz", allow_pickle=False) as saved:  # implicit's own save
        assert np.array_equal(saved["item_factors"], model.item_factors)
        assert all(saved[key].dtype != object for key in saved.files)  # read unpickled
    loaded = CollaborativeModel.load(folder)
    assert loaded.item_ids == model.item_ids and loaded.user_ids == model.user_ids
    assert np.array_equal(loaded.item_likes, model.item_likes)
    for liked in (["A0", "A1"], ["B7"], []):
        assert np.allclose(loaded.scores_for(liked), model.scores_for(liked))
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["n_users"] == 80 and meta["n_items"] == 20 and meta["factors"] == DEFAULT_FACTORS
    for key in ("regularization", "alpha", "iterations", "seed", "n_likes", "trained_at"):
        assert key in meta


def test_a_version_saved_before_als_npz_still_loads(model: CollaborativeModel,
                                                    tmp_path: Path) -> None:
    """Versions published before paperrec kept implicit's own file: factors in two .npy files,
    the ALS parameters in meta.json. They serve the same scores until the next train."""
    folder = tmp_path / "cf"
    model.save(folder)
    (folder / "als.npz").unlink()
    np.save(folder / "item_factors.npy", model.item_factors)
    np.save(folder / "user_factors.npy", np.asarray(model.als.user_factors))
    loaded = CollaborativeModel.load(folder)
    for liked in (["A0", "A1"], ["B7"], []):
        assert np.array_equal(loaded.scores_for(liked), model.scores_for(liked))


def test_fit_is_deterministic_for_a_fixed_seed() -> None:
    likes = two_taste_groups()
    first, second = fit(likes, seed=3), fit(likes, seed=3)
    assert np.array_equal(first.item_factors, second.item_factors)
    assert np.array_equal(first.scores_for(["A0", "B1"]), second.scores_for(["A0", "B1"]))


def test_fit_without_any_like_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one like"):
        CollaborativeModel.fit({"lonely": []})


def test_a_lone_like_is_no_evidence_for_collaborative_filtering() -> None:
    likes = {"solo": ["X"], "pair1": ["X", "Y"], "pair2": ["Y", "Z"]}
    model = CollaborativeModel.fit(likes, seed=0)
    evidence = dict(zip(model.item_ids, model.item_likes.tolist(), strict=True))
    assert evidence == {"X": 1, "Y": 2, "Z": 1}

"""CollaborativeModel: implicit-feedback ALS over likes, with instant fold-in of new likes.

Training wraps ``implicit``'s CPU AlternatingLeastSquares on the user x paper matrix of likes
(float32 ones). Serving needs only the item factors: ``scores_for`` solves for a user vector
from the likes the user has *now* (one ``factors x factors`` solve plus one matrix-vector
product), so feedback that arrived after training counts at once, for known and unknown users.

Confidence follows implicit 0.7: a like has confidence ``alpha`` (not ``1 + alpha``), every other
cell confidence 1 and preference 0. The fold-in of a user with liked items ``L`` is then

    (YᵀY + regularization·I + (alpha - 1)·Y_Lᵀ Y_L) x = alpha · Σ_{i in L} y_i

which is what ``AlternatingLeastSquares.recalculate_user`` computes; the tests check equality.

A fit is bitwise reproducible for a given seed on one machine, whatever the thread count: ALS
solves every user (and item) row independently. Another CPU or BLAS build may differ in the last
bits of the factors.

On disk (one folder): ``item_factors.npy``, ``user_factors.npy``, ``item_likes.npy``,
``item_ids.json``, ``user_ids.json`` and ``meta.json`` (written last). No pickle anywhere.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import scipy.sparse as sp
from implicit.cpu.als import AlternatingLeastSquares
from threadpoolctl import threadpool_limits

from recommender.ranking.calibration import DEFAULT as DEFAULT_CALIBRATION
from recommender.ranking.calibration import Calibration
from recommender.storage.versions import write_atomically

# Chosen on citeulike-a P10 (Recall@300 0.276, nDCG@20 0.065; fit 1.6 s on 2 idle cores). More
# factors trade Recall@300 for nDCG@20, recall rises with alpha up to ~100, regularization 0.3-3
# is flat there (3, not 1: it keeps small datasets, like the tests', from overfitting).
DEFAULT_FACTORS = 128
DEFAULT_REGULARIZATION = 3.0
DEFAULT_ALPHA = 160.0
DEFAULT_ITERATIONS = 30


class CollaborativeModel:
    """Item factors from ALS, plus the ids and the evidence (co-liked counts) behind them."""

    def __init__(
        self,
        item_ids: list[str],
        user_ids: list[str],
        item_factors: np.ndarray,
        user_factors: np.ndarray,
        item_likes: np.ndarray,
        meta: dict[str, Any],
        calibration: Calibration = DEFAULT_CALIBRATION,
    ) -> None:
        if not (len(item_ids) == len(item_factors) == len(item_likes)):
            raise ValueError("item ids, item factors and like counts differ in length")
        if len(user_ids) != len(user_factors):
            raise ValueError("user ids and user factors differ in length")
        self.item_ids = item_ids
        self.user_ids = user_ids
        self.item_factors = np.ascontiguousarray(item_factors, dtype=np.float32)
        self.user_factors = np.ascontiguousarray(user_factors, dtype=np.float32)
        self.item_likes = item_likes
        self.meta = meta
        # The probability of the lists ranked with this version (``paperrec train`` fits it).
        self.calibration = calibration
        self.regularization = float(meta["regularization"])
        self.alpha = float(meta["alpha"])
        self._column = {item_id: i for i, item_id in enumerate(item_ids)}
        factors64 = self.item_factors.astype(np.float64)
        self._gram = factors64.T @ factors64 + self.regularization * np.eye(factors64.shape[1])

    @classmethod
    def fit(
        cls,
        likes: Mapping[str, Sequence[str]],
        *,
        factors: int = DEFAULT_FACTORS,
        regularization: float = DEFAULT_REGULARIZATION,
        alpha: float = DEFAULT_ALPHA,
        iterations: int = DEFAULT_ITERATIONS,
        seed: int = 0,
        progress: bool = False,
    ) -> CollaborativeModel:
        """Fits ALS on ``likes`` (user id -> liked paper ids); users with no likes are skipped."""
        user_ids = sorted(user for user, liked in likes.items() if liked)
        item_ids = sorted({item for user in user_ids for item in likes[user]})
        if not item_ids:
            raise ValueError("collaborative filtering needs at least one like to train on")
        column = {item_id: i for i, item_id in enumerate(item_ids)}
        rows, cols = [], []
        for row, user in enumerate(user_ids):
            for col in sorted({column[item] for item in likes[user]}):
                rows.append(row)
                cols.append(col)
        matrix = sp.csr_matrix(
            (np.ones(len(rows), dtype=np.float32), (rows, cols)),
            shape=(len(user_ids), len(item_ids)),
        )
        with threadpool_limits(1, "blas"):  # implicit is much slower with a threaded BLAS
            als = AlternatingLeastSquares(
                factors=factors,
                regularization=regularization,
                alpha=alpha,
                iterations=iterations,
                random_state=seed,
            )
            als.fit(matrix, show_progress=progress)
        meta = {
            "factors": factors,
            "regularization": regularization,
            "alpha": alpha,
            "iterations": iterations,
            "seed": seed,
            "n_users": len(user_ids),
            "n_items": len(item_ids),
            "n_likes": int(matrix.nnz),
            "trained_at": time.time(),
        }
        # Evidence per item: likes from users who liked something else too. A lone like
        # co-occurs with nothing, so ALS cannot learn from it.
        co_liking = matrix[np.diff(matrix.indptr) >= 2]
        item_likes = np.diff(co_liking.tocsc().indptr).astype(np.int64)
        return cls(item_ids, user_ids, als.item_factors, als.user_factors, item_likes, meta)

    def _user_vector(self, liked_item_ids: Sequence[str]) -> np.ndarray:
        """The ALS user factor for these likes (unknown ids ignored; zeros when none is known)."""
        columns = sorted({self._column[item] for item in liked_item_ids if item in self._column})
        if not columns:
            return np.zeros(self.item_factors.shape[1], dtype=np.float32)
        liked = self.item_factors[columns].astype(np.float64)
        system = self._gram + (self.alpha - 1.0) * (liked.T @ liked)
        target = self.alpha * liked.sum(axis=0)
        return np.linalg.solve(system, target).astype(np.float32)

    def scores_for(self, liked_item_ids: Sequence[str]) -> np.ndarray:
        """A float32 score for every item, in ``item_ids`` order, from the user's current likes.

        Liked items are scored too (usually highest): callers filter what the user already has.
        """
        return self.item_factors @ self._user_vector(liked_item_ids)

    def save(self, folder: Path) -> None:
        """Writes every file atomically; ``meta.json`` last, so its presence means complete."""
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(folder / "item_factors.npy", lambda f: np.save(f, self.item_factors))
        write_atomically(folder / "user_factors.npy", lambda f: np.save(f, self.user_factors))
        write_atomically(folder / "item_likes.npy", lambda f: np.save(f, self.item_likes))
        write_atomically(folder / "item_ids.json", _json_writer(self.item_ids))
        write_atomically(folder / "user_ids.json", _json_writer(self.user_ids))
        write_atomically(folder / "calibration.json",
                         _json_writer(self.calibration.to_dict(), indent=2))
        write_atomically(folder / "meta.json", _json_writer(self.meta, indent=2))

    @classmethod
    def load(cls, folder: Path) -> CollaborativeModel:
        meta = json.loads((folder / "meta.json").read_text())
        item_ids = json.loads((folder / "item_ids.json").read_text())
        user_ids = json.loads((folder / "user_ids.json").read_text())
        item_factors = np.load(folder / "item_factors.npy", allow_pickle=False)
        user_factors = np.load(folder / "user_factors.npy", allow_pickle=False)
        item_likes = np.load(folder / "item_likes.npy", allow_pickle=False)
        if len(item_ids) != meta["n_items"] or len(user_ids) != meta["n_users"]:
            raise ValueError(f"collaborative model in {folder} is inconsistent: sizes differ")
        calibrated = folder / "calibration.json"  # versions trained before it existed: none
        calibration = (Calibration.from_dict(json.loads(calibrated.read_text()))
                       if calibrated.exists() else DEFAULT_CALIBRATION)
        return cls(item_ids, user_ids, item_factors, user_factors, item_likes, meta, calibration)


def _json_writer(value: Any, indent: int | None = None) -> Callable[[BinaryIO], object]:
    return lambda handle: handle.write(json.dumps(value, indent=indent).encode())


"""CollaborativeModel: implicit-feedback ALS over likes, with instant fold-in of new likes.

Training wraps ``implicit``'s CPU AlternatingLeastSquares on the user x paper matrix of likes
(float32 ones). Serving needs only the item factors: ``scores_for`` folds the likes the user
has *now* in with ``recalculate_user`` (one ``factors x factors`` solve plus one matrix-vector
product), so feedback that arrived after training counts at once, for known and unknown users.

A fit is bitwise reproducible for a given seed on one machine, whatever the thread count: ALS
solves every user (and item) row independently. Another CPU or BLAS build may differ in the last
bits of the factors.

On disk (one folder): ``als.npz`` (implicit's own ``save``: numpy arrays, loaded with
``allow_pickle=False``), ``item_likes.npy``, ``item_ids.json``, ``user_ids.json``,
``calibration.json`` and ``meta.json`` (written last). No pickle anywhere.
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
from tqdm import tqdm

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
ALS_FILE = "als.npz"


class CollaborativeModel:
    """implicit's ALS model, plus the ids and the evidence (co-liked counts) behind it."""

    def __init__(
        self,
        als: AlternatingLeastSquares,
        item_ids: list[str],
        user_ids: list[str],
        item_likes: np.ndarray,
        meta: dict[str, Any],
        calibration: Calibration = DEFAULT_CALIBRATION,
    ) -> None:
        if not (len(item_ids) == len(als.item_factors) == len(item_likes)):
            raise ValueError("item ids, item factors and like counts differ in length")
        if len(user_ids) != len(als.user_factors):
            raise ValueError("user ids and user factors differ in length")
        # One fold-in is one small solve: implicit's default (an OpenMP team over every core)
        # made it 0.16 -> 71 ms at the median on a busy 2-core machine; one thread it is.
        als.num_threads = 1
        self.als = als
        self.item_ids = item_ids
        self.user_ids = user_ids
        self.item_likes = item_likes
        self.meta = meta
        # The probability of the lists ranked with this version (``paperrec train`` fits it).
        self.calibration = calibration
        self._column = {item_id: i for i, item_id in enumerate(item_ids)}

    @property
    def item_factors(self) -> np.ndarray:
        return np.asarray(self.als.item_factors)

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
        matrix = _likes_matrix([[column[item] for item in likes[user]] for user in user_ids],
                               len(item_ids))
        with threadpool_limits(1, "blas"):  # implicit is much slower with a threaded BLAS
            als = AlternatingLeastSquares(
                factors=factors,
                regularization=regularization,
                alpha=alpha,
                iterations=iterations,
                random_state=seed,
            )
            # implicit's own bar has no label: ours says what the iterations are.
            with tqdm(total=iterations, desc="training ALS", unit="iteration",
                      disable=not progress) as bar:
                als.fit(matrix, show_progress=False,
                        callback=lambda _iteration, _seconds, _loss: bar.update(1))
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
        return cls(als, item_ids, user_ids, item_likes, meta)

    def scores_for(self, liked_item_ids: Sequence[str]) -> np.ndarray:
        """A float32 score for every item, in ``item_ids`` order, from the user's current likes
        (unknown ids ignored; all zeros when none is known).

        Liked items are scored too (usually highest): callers filter what the user already has.
        """
        columns = [self._column[item] for item in liked_item_ids if item in self._column]
        if not columns:
            return np.zeros(len(self.item_ids), dtype=np.float32)
        user = self.als.recalculate_user(0, _likes_matrix([columns], len(self.item_ids)))
        return self.item_factors @ user

    def save(self, folder: Path) -> None:
        """Writes every file atomically; ``meta.json`` last, so its presence means complete."""
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(folder / ALS_FILE, self.als.save)
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
        item_likes = np.load(folder / "item_likes.npy", allow_pickle=False)
        if len(item_ids) != meta["n_items"] or len(user_ids) != meta["n_users"]:
            raise ValueError(f"collaborative model in {folder} is inconsistent: sizes differ")
        with threadpool_limits(1, "blas"):  # or implicit warns about the threaded BLAS
            als = (AlternatingLeastSquares.load(str(folder / ALS_FILE))
                   if (folder / ALS_FILE).exists() else _als_of_factor_files(folder, meta))
        calibrated = folder / "calibration.json"  # versions trained before it existed: none
        calibration = (Calibration.from_dict(json.loads(calibrated.read_text()))
                       if calibrated.exists() else DEFAULT_CALIBRATION)
        return cls(als, item_ids, user_ids, item_likes, meta, calibration)


def _likes_matrix(columns_by_row: Sequence[Sequence[int]], n_items: int) -> sp.csr_matrix:
    """Rows of ones at each row's liked columns (a column liked twice counts once)."""
    rows = [np.unique(np.asarray(columns, dtype=np.int32)) for columns in columns_by_row]
    indptr = np.cumsum([0, *map(len, rows)])
    return sp.csr_matrix((np.ones(indptr[-1], dtype=np.float32), np.concatenate(rows), indptr),
                         shape=(len(rows), n_items))


def _als_of_factor_files(folder: Path, meta: dict[str, Any]) -> AlternatingLeastSquares:
    """A version saved before ``als.npz`` (paperrec before issue 24): its factors in two .npy
    files and its parameters in ``meta.json``. Loaded as it is, so an upgrade serves the same
    lists until the next ``paperrec train`` writes the new layout."""
    als = AlternatingLeastSquares(factors=int(meta["factors"]),
                                  regularization=float(meta["regularization"]),
                                  alpha=float(meta["alpha"]),
                                  iterations=int(meta["iterations"]), random_state=meta["seed"])
    als.item_factors = np.load(folder / "item_factors.npy", allow_pickle=False)
    als.user_factors = np.load(folder / "user_factors.npy", allow_pickle=False)
    return als


def _json_writer(value: Any, indent: int | None = None) -> Callable[[BinaryIO], object]:
    return lambda handle: handle.write(json.dumps(value, indent=indent).encode())

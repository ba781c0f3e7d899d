"""How likely a paper on a reading list is worth reading: Platt scaling of the list's score.

A list item's probability is ``sigmoid(a * z + b * log(1 + likes) + c)``: ``z`` is its score in
the user's own units (``Ranked.scale``: how far it stands above the average paper of the
collection, in the spread of the user's scores over the collection) and ``likes`` how many
papers the user liked (more likes, a surer profile). The three numbers are fitted by logistic
regression on held-out likes: which of a user's top ``DEPTH`` papers, ranked from the other
likes, the user went on to like.

``paperrec train`` fits them on the deployment's own impressions once the log holds enough
(``jobs.calibrate_from_log``: the probability shown against what readers liked on the lists
they were served), else on its feedback (each user's latest likes held out,
``jobs.calibrate``), and stores them with the collaborative model version, with where they
were fitted (``fitted_from``), on how much and their ECE; with too little of either it keeps
the default fitted for the index's embedding model (``default_for``).
``paperrec evaluate`` fits and measures them on held-out likes (``expected_calibration_error``:
10 equal-width bins).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from recommender.embedding.models import canonical_name

DEPTH = 20  # list items per user the calibration is fitted and measured on
BINS = 10


@dataclass(frozen=True)
class Calibration:
    score: float
    likes: float
    intercept: float
    base_rate: float  # the share of list items liked: the probability of a list without likes
    source: str  # where it was fitted, in words
    # "log" (the impression log), "held-out likes" or "default"
    fitted_from: str = "default"
    ece: float | None = None  # measured on items not fitted on (the log's newest lists)
    items: int = 0  # list items fitted on
    liked: int = 0  # of them liked
    lists: int = 0  # lists they were on (the log)

    def probability(self, z: np.ndarray, likes: int | np.ndarray) -> np.ndarray:
        """The probability of each item of a list of a user with ``likes`` likes (one count,
        or one per item); without likes, the base rate."""
        z = np.asarray(z, dtype=np.float64)
        likes = np.broadcast_to(np.asarray(likes, dtype=np.float64), z.shape)
        logit = self.score * z + self.likes * np.log1p(likes) + self.intercept
        fitted = 1.0 / (1.0 + np.exp(-np.clip(logit, -50, 50)))
        return np.where(likes > 0, fitted, self.base_rate)

    def to_dict(self) -> dict[str, float | str | int | None]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        ece = data.get("ece")
        return cls(float(data["score"]), float(data["likes"]), float(data["intercept"]),
                   float(data["base_rate"]), str(data["source"]),
                   str(data.get("fitted_from", "default")),
                   None if ece is None else float(ece), int(data.get("items", 0)),
                   int(data.get("liked", 0)), int(data.get("lists", 0)))


# Fitted by benchmarks/calibration.py on citeulike-a (P1, P10 and P10 cut to 3 and 5 likes per
# user; results in benchmarks/results/calibration.json: ECE 0.014-0.018 on each): the safe
# default until a deployment has enough held-out likes of its own (``jobs.calibrate``).
DEFAULT = Calibration(score=0.30200, likes=-0.18449, intercept=-3.69991, base_rate=0.10580,
                      source="default (citeulike-a, benchmarks/calibration.py)")
# The same fit over all-mpnet-base-v2's vectors (benchmarks/results/calibration-mpnet.json: ECE
# 0.014-0.019 on each split, where the one above gives 0.002-0.050: its like-count term
# differs, -0.34 against -0.18).
DEFAULTS = {
    "all-mpnet-base-v2": Calibration(
        score=0.26732, likes=-0.33790, intercept=-3.31777,
        base_rate=0.11217,
        source="default for all-mpnet-base-v2 (citeulike-a, benchmarks/calibration.py)"),
}


def default_for(model: str) -> Calibration:
    """The default calibration of lists over an index of this embedding model's vectors."""
    return DEFAULTS.get(canonical_name(model), DEFAULT)


def fit(z: np.ndarray, likes: np.ndarray, labels: np.ndarray, source: str,
        fitted_from: str = "held-out likes") -> Calibration:
    """Logistic regression of the labels (1: liked later) on z and log(1 + likes)."""
    features = np.column_stack([z, np.log1p(likes)])
    labels = np.asarray(labels, dtype=np.int64)
    model = LogisticRegression(C=100.0, max_iter=1000).fit(features, labels)
    return Calibration(float(model.coef_[0, 0]), float(model.coef_[0, 1]),
                       float(model.intercept_[0]), float(labels.mean()), source,
                       fitted_from, items=len(labels), liked=int(labels.sum()))


def expected_calibration_error(probability: np.ndarray, labels: np.ndarray,
                               bins: int = BINS) -> float:
    """Mean |share liked - mean probability| over equal-width probability bins, weighted by
    the items in each bin."""
    probability = np.asarray(probability, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    if not len(probability):
        return 0.0
    which = np.minimum((probability * bins).astype(np.int64), bins - 1)
    error = 0.0
    for b in range(bins):
        in_bin = which == b
        if in_bin.any():
            error += in_bin.sum() * abs(labels[in_bin].mean() - probability[in_bin].mean())
    return float(error / len(probability))


@dataclass
class Observations:
    """List items with what calibration needs: z, the user's likes, liked later or not."""

    z: list[np.ndarray]
    likes: list[np.ndarray]
    labels: list[np.ndarray]

    @classmethod
    def empty(cls) -> Observations:
        return cls([], [], [])

    def add(self, z: np.ndarray, likes: int, labels: np.ndarray) -> None:
        self.z.append(np.asarray(z, dtype=np.float64))
        self.likes.append(np.full(len(z), likes, dtype=np.float64))
        self.labels.append(np.asarray(labels, dtype=np.int64))

    def arrays(self, users: Sequence[int] | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(z, likes, labels) of the items of these users (default: all)."""
        chosen = range(len(self.z)) if users is None else users

        def joined(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate([parts[u] for u in chosen]) if len(chosen) else np.zeros(0)

        return joined(self.z), joined(self.likes), joined(self.labels)

    @property
    def positives(self) -> int:
        return int(sum(int(labels.sum()) for labels in self.labels))

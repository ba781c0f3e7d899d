"""The methods the offline evaluation compares, behind one small interface.

A method is fitted once on the training likes, then asked for one user at a time: given the
rows of the papers the user liked, it returns a score for every paper (higher is better;
``-inf`` allowed) or, when it ranks for itself, ``TopRows``. The runner (``runner``) removes
the user's training papers and takes the top ``DEPTH``.

- ``popular``: training likes per paper, the same list for everyone.
- ``content``: the plain embedding baseline of tools like zotero-arxiv-daily: each paper's
  mean cosine to the liked papers (zotero-arxiv-daily weights recent likes more; these
  datasets have no like times). ``content-max``, the best cosine, is kept for comparison:
  the mean does better on citeulike-a P10.
- ``cf``: collaborative filtering alone (``CollaborativeModel``).
- ``tfidf-svm``: the arxiv-sanity method: TF-IDF over title + abstract and a linear SVM per
  user, liked papers against a sample of the others.
- ``hybrid``: the production ranking (``ranking.rank.rank``) over the context the service
  builds (``ranking.context.context_for``) from an index version published the way
  ``paperrec rebuild-index`` publishes one: over an approximate (HNSW) index it scores only
  the candidates the index finds, as the service does for large corpora.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
from scipy import sparse

from recommender.core.config import EXACT_INDEX_MAX
from recommender.core.errors import InvalidInput
from recommender.index.store import IndexStore
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.context import context_for
from recommender.ranking.rank import RankingContext, rank

if TYPE_CHECKING:
    from recommender.evaluation.dataset import Dataset

DEPTH = 300  # the deepest cut-off of any metric

# arxiv-sanity-lite's settings (compute.py, serve.py), with min_df scaled to small corpora.
TFIDF_MAX_FEATURES = 20_000
TFIDF_MAX_DF = 0.5
SVM_C = 0.1
# Negatives per user: a sample drawn from the seed and the user's likes. On citeulike-a P10
# (17k papers) it is 3x faster than using every other paper (117 s against 336 s for all
# users) and slightly better (recall@300 0.342 against 0.325).
SVM_NEGATIVES = 2_000
# The index ``hybrid`` ranks through: ``auto`` is the service's choice by corpus size
# (``Settings.exact_index_max``); ``exact`` and ``hnsw`` force a kind whatever the size, so the
# large-corpus (candidate) path can be measured on a small dataset.
INDEX_KINDS = ("auto", "exact", "hnsw")
# Labels the temporary index version in its meta.json (the vectors come from the runner).
EVALUATION_MODEL = "offline-evaluation"


@dataclass
class TopRows:
    """A method's own ranking: paper rows, best first."""

    rows: np.ndarray


class Method(Protocol):
    name: str
    needs_vectors: bool  # wants the papers' embeddings in ``fit``

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None: ...

    def scores(self, liked: np.ndarray) -> np.ndarray | TopRows: ...


def _require(vectors: np.ndarray | None) -> np.ndarray:
    if vectors is None:
        raise ValueError("this method needs the paper embeddings")
    return vectors


class Popular:
    needs_vectors = False

    def __init__(self, seed: int) -> None:
        self.name = "popular"
        self._counts = np.zeros(0)

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None:
        self._counts = data.like_counts.astype(np.float64)

    def scores(self, liked: np.ndarray) -> np.ndarray:
        return self._counts


class ContentSimilarity:
    """Cosine of each paper to the liked papers, aggregated by mean (or max) over the likes."""

    needs_vectors = True

    def __init__(self, seed: int, aggregate: Literal["mean", "max"] = "mean") -> None:
        self.name = "content" if aggregate == "mean" else f"content-{aggregate}"
        self._aggregate = aggregate
        self._vectors = np.zeros((0, 0), np.float32)

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None:
        self._vectors = _require(vectors)

    def scores(self, liked: np.ndarray) -> np.ndarray:
        if not len(liked):
            return np.zeros(len(self._vectors), np.float32)
        if self._aggregate == "mean":
            return self._vectors @ self._vectors[liked].mean(axis=0)
        return (self._vectors @ self._vectors[liked].T).max(axis=1)


class Collaborative:
    """``CollaborativeModel`` scores, mapped from its item order onto the dataset's rows."""

    needs_vectors = False

    def __init__(self, seed: int) -> None:
        self.name = "cf"
        self._seed = seed
        self._model: CollaborativeModel | None = None
        self._rows = np.zeros(0, np.int64)
        self._ids: list[str] = []

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None:
        self._model = CollaborativeModel.fit(data.training_likes(), seed=self._seed)
        self._ids = data.paper_ids
        row_of = {pid: row for row, pid in enumerate(self._ids)}
        self._rows = np.array([row_of[pid] for pid in self._model.item_ids], dtype=np.int64)

    def scores(self, liked: np.ndarray) -> np.ndarray:
        assert self._model is not None, "fit first"
        full = np.full(len(self._ids), -np.inf)
        full[self._rows] = self._model.scores_for([self._ids[r] for r in liked])
        return full


class TfidfSvm:
    """Per user, a linear SVM on TF-IDF features: likes against sampled other papers."""

    needs_vectors = False

    def __init__(self, seed: int, negatives: int | None = SVM_NEGATIVES) -> None:
        self.name = "tfidf-svm"
        self._seed = seed
        self._negatives = negatives
        self._features = sparse.csr_matrix((0, 0))
        self._new_svm: Callable[[], Any] | None = None

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None:
        # scikit-learn takes a second to import, and only this method needs it.
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.svm import LinearSVC

        self._new_svm = partial(LinearSVC, C=SVM_C, class_weight="balanced", tol=1e-6,
                                max_iter=10_000, random_state=self._seed)
        texts = [paper.text for paper in data.papers]
        vectorizer = TfidfVectorizer(
            strip_accents="unicode", stop_words="english", ngram_range=(1, 2),
            token_pattern=r"(?u)\b[a-zA-Z_][a-zA-Z0-9_]+\b", sublinear_tf=True,
            max_features=TFIDF_MAX_FEATURES, max_df=TFIDF_MAX_DF,
            min_df=max(1, min(5, len(texts) // 1000)), dtype=np.float32,
        )
        try:
            self._features = sparse.csr_matrix(vectorizer.fit_transform(texts))
        except ValueError as exc:  # nothing left after stop words and df limits
            raise InvalidInput(f"tfidf-svm: cannot build TF-IDF features ({exc})") from exc

    def scores(self, liked: np.ndarray) -> np.ndarray:
        assert self._new_svm is not None, "fit first"
        n = self._features.shape[0]
        others = np.setdiff1d(np.arange(n), liked)
        if not len(liked) or not len(others):
            return np.zeros(n)
        if self._negatives is not None and len(others) > self._negatives:
            rng = np.random.default_rng([self._seed, *liked.tolist()])
            others = np.sort(rng.choice(others, self._negatives, replace=False))
        rows = np.concatenate([liked, others])
        labels = np.concatenate([np.ones(len(liked)), np.zeros(len(others))])
        svm = self._new_svm().fit(self._features[rows], labels)
        return np.asarray(svm.decision_function(self._features))


class Hybrid:
    """The production ranking: ``rank`` over the service's own context (``context_for``) on an
    index version published from the papers' embeddings (``IndexStore.publish``, into a
    temporary directory), with the training likes in place of Redis."""

    needs_vectors = True

    def __init__(self, seed: int, exact_max: int = EXACT_INDEX_MAX) -> None:
        self.name = "hybrid"
        self._seed = seed
        self._exact_max = exact_max
        self._context: RankingContext | None = None
        self.index_kind: str | None = None  # "exact" or "hnsw" once fitted

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None:
        model = CollaborativeModel.fit(data.training_likes(), seed=self._seed)
        days = np.asarray([paper.day for paper in data.papers], dtype=np.float64)
        with tempfile.TemporaryDirectory(prefix="paperrec-evaluation-") as folder:
            # The returned version holds its arrays and FAISS index in memory.
            index = IndexStore(Path(folder)).publish(
                data.paper_ids, _require(vectors), days, EVALUATION_MODEL, self._exact_max,
                full=True)
        assert index.ids == data.paper_ids, "a full build keeps the papers' order"
        self.index_kind = str(index.meta["kind"])
        self._context = context_for(index, model, data.like_counts)

    def scores(self, liked: np.ndarray) -> TopRows:
        assert self._context is not None, "fit first"
        ranked = rank(self._context, liked=liked, disliked=np.zeros(0, np.int64), k=DEPTH)
        return TopRows(ranked.rows)


def exact_max_for(index: str, exact_index_max: int) -> int:
    """The ``exact_max`` threshold that builds this kind of index (``INDEX_KINDS``) over any
    corpus: ``auto`` is the service's own, ``exact`` and ``hnsw`` force the kind."""
    if index not in INDEX_KINDS:
        raise InvalidInput(f"unknown index kind {index!r}; choose from {', '.join(INDEX_KINDS)}")
    return {"auto": exact_index_max, "exact": sys.maxsize, "hnsw": 0}[index]


_FACTORIES: dict[str, Callable[[int], Method]] = {
    "popular": Popular,
    "content": ContentSimilarity,
    "content-max": lambda seed: ContentSimilarity(seed, aggregate="max"),
    "cf": Collaborative,
    "tfidf-svm": TfidfSvm,
    "hybrid": Hybrid,
}
METHOD_NAMES = tuple(_FACTORIES)


def make_method(name: str, seed: int, exact_max: int = EXACT_INDEX_MAX) -> Method:
    """A new, unfitted method; ``seed`` drives everything random in it. ``exact_max``: the
    corpus size above which ``hybrid`` ranks through an HNSW index (see ``exact_max_for``)."""
    if name not in _FACTORIES:
        raise InvalidInput(f"unknown method {name!r}; choose from {', '.join(METHOD_NAMES)}")
    if name == "hybrid":
        return Hybrid(seed, exact_max)
    return _FACTORIES[name](seed)

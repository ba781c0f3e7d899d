"""The methods the offline evaluation compares, behind one small interface.

A method is fitted once on the training likes, then asked for one user at a time: given the
rows of the papers the user liked, it returns a score for every paper (higher is better;
``-inf`` allowed) or, when it ranks for itself, ``TopRows``. The runner (``runner``) removes
the user's training papers and takes the top ``DEPTH``. Asked to rank only ``among`` some
rows (the new papers of the new-papers protocol), a method that scores every paper may
ignore it (the runner keeps only those rows); one that ranks for itself must rank them.

- ``popular``: training likes per paper, the same list for everyone.
- ``content``: the plain embedding baseline of tools like zotero-arxiv-daily: each paper's
  mean cosine to the liked papers (zotero-arxiv-daily weights recent likes more; these
  datasets have no like times). ``content-max``, the best cosine, is kept for comparison:
  the mean does better on citeulike-a P10.
- ``content-centred``: the same over centred embeddings (the corpus mean subtracted, then
  unit length): the strongest simple baseline (DESIGN.md), since raw sentence embeddings
  share a large common direction that dominates their cosines.
- ``content-augmented``: the same over the service's content space (``index.content_space``:
  centred, neighbour-augmented vectors): the content part of ``hybrid`` without its Fisher
  term; no collaborative filtering, no popularity.
- ``cf``: collaborative filtering alone (``CollaborativeModel``).
- ``tfidf-svm``: the arxiv-sanity method: TF-IDF over title + abstract and a linear SVM per
  user, liked papers against a sample of the others.
- ``hybrid``: the production ranking (``ranking.rank.rank``) over the context the service
  builds (``ranking.context.context_for``) from an index version published the way
  ``paperrec rebuild-index`` publishes one: over an approximate (HNSW) index it scores only
  the candidates the index finds, as the service does for large corpora. Among the new
  papers, it ranks as a digest does: a ``ListRequest`` with ``since_day``, the new papers
  dated after the rest.
- ``hybrid-interests``: ``hybrid`` for a reader of several topics: the training likes
  clustered (``ranking.interests.interests``), each cluster ranked against the whole profile
  and the lists interleaved (``ranking.interests.rank_interests``, what the service does
  with a reader's collections); the same as ``hybrid`` for a reader of one topic.
- ``content-whitened`` and ``colike-projection``: ranking ideas that did not become the
  ranking but are kept to compare with it (``variants``).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
from scipy import sparse

from recommender.core.config import EXACT_INDEX_MAX
from recommender.core.errors import InvalidInput
from recommender.evaluation.variants import CoLikeProjection, WhitenedContent
from recommender.index.content_space import (
    ContentSpace,
    build_content_space,
    normalise,
)
from recommender.index.store import IndexStore
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.context import RankingContext, context_for
from recommender.ranking.interests import groups_of, interests, rank_interests
from recommender.ranking.rank import rank
from recommender.ranking.request import ListRequest

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
# ``Hybrid`` ranks the new papers as a digest of the papers since this day (the others: day 0).
DIGEST_DAY = 1.0


@dataclass
class TopRows:
    """A method's own ranking: paper rows, best first; ``z``: their scores in the user's own
    units (``Ranked.scale``), which the runner calibrates (``ranking.calibration``)."""

    rows: np.ndarray
    z: np.ndarray | None = None


class Method(Protocol):
    name: str
    needs_vectors: bool  # wants the papers' embeddings in ``fit``

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None: ...

    def scores(self, liked: np.ndarray,
               among: np.ndarray | None = None) -> np.ndarray | TopRows: ...


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

    def scores(self, liked: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        return self._counts


class ContentSimilarity:
    """Cosine of each paper to the liked papers, aggregated by mean (or max) over the likes;
    ``centred``: over the embeddings minus their corpus mean, renormalised."""

    needs_vectors = True

    def __init__(self, seed: int, aggregate: Literal["mean", "max"] = "mean",
                 centred: bool = False) -> None:
        self.name = "content" + ("-centred" if centred else "") + (
            "" if aggregate == "mean" else f"-{aggregate}")
        self._aggregate = aggregate
        self._centred = centred
        self._vectors = np.zeros((0, 0), np.float32)

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None:
        self._vectors = _require(vectors)
        if self._centred:
            self._vectors = normalise(self._vectors - self._vectors.mean(axis=0))

    def scores(self, liked: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        if not len(liked):
            return np.zeros(len(self._vectors), np.float32)
        if self._aggregate == "mean":
            return self._vectors @ self._vectors[liked].mean(axis=0)
        return (self._vectors @ self._vectors[liked].T).max(axis=1)


class AugmentedContent:
    """Mean cosine to the liked papers in the service's content space: the centred,
    neighbour-augmented vectors ``build_content_space`` makes (as an index build does); the
    content part of ``rank`` without its Fisher term."""

    needs_vectors = True

    def __init__(self, seed: int, exact_max: int = EXACT_INDEX_MAX) -> None:
        self.name = "content-augmented"
        self._exact_max = exact_max
        self._space: ContentSpace | None = None

    def fit(self, data: Dataset, vectors: np.ndarray | None) -> None:
        self._space = build_content_space(_require(vectors), self._exact_max)

    def scores(self, liked: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        assert self._space is not None, "fit first"
        space = self._space
        if not len(liked):
            return np.zeros(len(space.vectors), np.float32)
        return space.vectors @ space.vectors[liked].mean(axis=0)


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

    def scores(self, liked: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
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

    def scores(self, liked: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
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
        self._digest: tuple[np.ndarray, RankingContext] | None = None  # (among, its context)
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
        self._digest = None

    @property
    def context(self) -> RankingContext:
        """The ranking context it ranks in (fitted)."""
        assert self._context is not None, "fit first"
        return self._context

    def scores(self, liked: np.ndarray, among: np.ndarray | None = None) -> TopRows:
        """The top ``DEPTH``; ``among``: of those rows only, ranked as a digest ranks the papers
        that came out since the last one (``since_day``), here the rows ``among``."""
        assert self._context is not None, "fit first"
        if among is None:
            ranked = rank(self._context, ListRequest(liked, DEPTH))
            return TopRows(ranked.rows, ranked.scores / ranked.scale)
        ranked = rank(self._dated(among), ListRequest(liked, DEPTH, since_day=DIGEST_DAY))
        return TopRows(ranked.rows)

    def _dated(self, among: np.ndarray) -> RankingContext:
        """The context with the rows ``among`` dated ``DIGEST_DAY`` and the others before
        (built once per set of rows)."""
        assert self._context is not None, "fit first"
        if self._digest is None or not np.array_equal(self._digest[0], among):
            dates = np.zeros(len(self._context.item_ids))
            dates[among] = DIGEST_DAY
            self._digest = (np.array(among), replace(self._context, dates=dates))
        return self._digest[1]


class HybridInterests(Hybrid):
    """``Hybrid`` with the user's likes clustered into interests, each ranked on its own and
    interleaved with the whole profile's list (``rank_interests``)."""

    def __init__(self, seed: int, exact_max: int = EXACT_INDEX_MAX) -> None:
        super().__init__(seed, exact_max)
        self.name = "hybrid-interests"

    def scores(self, liked: np.ndarray, among: np.ndarray | None = None) -> TopRows:
        assert self._context is not None, "fit first"
        ctx = self._context if among is None else self._dated(among)
        request = ListRequest(liked, DEPTH, since_day=None if among is None else DIGEST_DAY)
        groups = groups_of(liked, interests(ctx.vectors[liked], self._seed))
        ranked = rank_interests(ctx, request, groups)
        return TopRows(ranked.rows, ranked.scores / ranked.scale if among is None else None)


def exact_max_for(index: str, exact_index_max: int) -> int:
    """The ``exact_max`` threshold that builds this kind of index (``INDEX_KINDS``) over any
    corpus: ``auto`` is the service's own, ``exact`` and ``hnsw`` force the kind."""
    if index not in INDEX_KINDS:
        raise InvalidInput(f"unknown index kind {index!r}; choose from {', '.join(INDEX_KINDS)}")
    return {"auto": exact_index_max, "exact": sys.maxsize, "hnsw": 0}[index]


# name -> (seed, exact_max) -> method
_FACTORIES: dict[str, Callable[[int, int], Method]] = {
    "popular": lambda seed, _: Popular(seed),
    "content": lambda seed, _: ContentSimilarity(seed),
    "content-max": lambda seed, _: ContentSimilarity(seed, aggregate="max"),
    "content-centred": lambda seed, _: ContentSimilarity(seed, centred=True),
    "content-augmented": AugmentedContent,
    "cf": lambda seed, _: Collaborative(seed),
    "tfidf-svm": lambda seed, _: TfidfSvm(seed),
    "hybrid": Hybrid,
    "hybrid-interests": HybridInterests,
    "content-whitened": lambda seed, _: WhitenedContent(seed),
    "colike-projection": lambda seed, _: CoLikeProjection(seed),
}
METHOD_NAMES = tuple(_FACTORIES)


def make_method(name: str, seed: int, exact_max: int = EXACT_INDEX_MAX) -> Method:
    """A new, unfitted method; ``seed`` drives everything random in it. ``exact_max``: the
    corpus size above which ``hybrid`` ranks through an HNSW index and ``content-augmented``
    finds neighbours through HNSW (see ``exact_max_for``)."""
    if name not in _FACTORIES:
        raise InvalidInput(f"unknown method {name!r}; choose from {', '.join(METHOD_NAMES)}")
    return _FACTORIES[name](seed, exact_max)

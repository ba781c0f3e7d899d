"""Recommender: the one engine behind the REST API, the digests and the evaluation.

It joins the corpus (what a paper is), the live index (where it sits in embedding space) and
the feedback store (what a user said), and ranks with the pure functions of ``ranking``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from .config import Settings
from .corpus import CorpusStore
from .embedder import Embedder, shared_embedder
from .errors import InvalidInput, NotFound
from .feedback import Feedback, FeedbackStore, Signal
from .identifiers import validate_paper_id, validate_user_id
from .index import IndexStore, LiveIndex, PaperIndex
from .papers import Paper
from .ranking import cold_start_relevance, content_scores, mmr
from .redis_keys import RedisKeys
from .redis_server import connect

SCORE_ALL_BELOW = 20_000  # below this many papers every paper is a candidate
COLD_START_POOL = 1_000
MAX_K = 200


@dataclass
class Recommendation:
    paper_id: str
    title: str
    score: float
    reason: str
    because: list[str] = field(default_factory=list)  # ids of the liked papers behind it

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class ReadingList:
    user_id: str
    personalized: bool
    items: list[Recommendation]
    index_version: str

    def to_dict(self) -> dict[str, object]:
        return {
            "user_id": self.user_id,
            "personalized": self.personalized,
            "index_version": self.index_version,
            "items": [item.to_dict() for item in self.items],
        }


def check_k(k: int) -> int:
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}, got {k}")
    return k


class Recommender:
    def __init__(
        self, corpus: CorpusStore, index: LiveIndex, feedback: FeedbackStore, embedder: Embedder
    ) -> None:
        self.corpus = corpus
        self.index = index
        self.feedback = feedback
        self.embedder = embedder

    @classmethod
    def from_settings(cls, settings: Settings) -> Recommender:
        return cls(
            CorpusStore(settings.corpus_path),
            LiveIndex(IndexStore(settings.index_dir), settings.index_check_seconds),
            FeedbackStore(connect(settings), RedisKeys(settings.redis_namespace)),
            shared_embedder(settings.model, settings.embed_batch_size),
        )

    # --- papers -------------------------------------------------------------------------
    def paper(self, paper_id: str) -> Paper:
        paper = self.corpus.get(validate_paper_id(paper_id))
        if paper is None:
            raise NotFound(f"no paper with id {paper_id!r}; ingest it with `paperrec ingest`")
        return paper

    def similar(self, paper_id: str, k: int) -> list[Recommendation]:
        self.paper(paper_id)
        index = self.index.get()
        row = index.row(paper_id)
        rows, scores = index.search(index.vectors[row : row + 1], check_k(k) + 1)
        hits = [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True)
                if r >= 0 and r != row]
        return self._items(index, hits[:k], lambda _r: "close in content")

    def search(self, query: str, k: int) -> list[Recommendation]:
        query = query.strip()
        if not query:
            raise InvalidInput("q must be a non-empty search text, e.g. ?q=federated+learning")
        if len(query) > 1000:
            raise InvalidInput(f"q is {len(query)} characters long; at most 1000 are allowed")
        index = self.index.get()
        vector = self.embedder.encode([query])
        rows, scores = index.search(vector, check_k(k))
        hits = [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]
        return self._items(index, hits, lambda _r: f"matches {query[:60]!r}")

    # --- feedback -----------------------------------------------------------------------
    def set_feedback(self, user_id: str, paper_id: str, signal: Signal, now: float) -> bool:
        validate_user_id(user_id)
        self.paper(paper_id)
        return self.feedback.set(user_id, paper_id, signal, now)

    def remove_feedback(self, user_id: str, paper_id: str) -> None:
        validate_user_id(user_id)
        validate_paper_id(paper_id)
        if not self.feedback.remove(user_id, paper_id):
            raise NotFound(f"user {user_id!r} has no feedback on paper {paper_id!r}")

    def user_feedback(self, user_id: str) -> list[Feedback]:
        return self.feedback.get(validate_user_id(user_id))

    # --- reading lists ------------------------------------------------------------------
    def recommend(self, user_id: str, k: int) -> ReadingList:
        signals = self.user_feedback(user_id)
        check_k(k)
        index = self.index.get()
        liked = rows_with_signal(index, signals, "like")
        disliked = rows_with_signal(index, signals, "dislike")
        seen = set(liked) | set(disliked)
        if liked:
            items = self._personal(index, liked, disliked, seen, k)
        else:
            items = self._cold_start(index, disliked, seen, k)
        return ReadingList(user_id, bool(liked), items, index.version)

    def _personal(
        self, index: PaperIndex, liked: list[int], disliked: list[int], seen: set[int], k: int
    ) -> list[Recommendation]:
        candidates = self._candidates(index, liked, k)
        candidates = np.asarray([r for r in candidates if r not in seen], dtype=np.int64)
        scored = content_scores(index.vectors[candidates], index.vectors[liked],
                                index.vectors[disliked])
        order = np.argsort(-scored.score, kind="stable")[:k]
        titles = self.corpus.get_many([index.ids[r] for r in liked])
        hits: list[tuple[int, float]] = []
        because: dict[int, str] = {}
        for pos in order:
            row = int(candidates[pos])
            source = index.ids[liked[int(scored.nearest_like[pos])]]
            hits.append((row, float(scored.score[pos])))
            because[row] = source
        def reason(row: int) -> str:
            paper = titles.get(because[row])
            return f"similar to '{_short(paper.title if paper else because[row])}' that you liked"
        return self._items(index, hits, reason, lambda row: [because[row]])

    def _candidates(self, index: PaperIndex, liked: list[int], k: int) -> np.ndarray:
        if len(index) <= SCORE_ALL_BELOW:
            return np.arange(len(index))
        per_like = max(50, 4 * k)
        rows, _ = index.search(index.vectors[liked], per_like)
        return np.unique(rows[rows >= 0])

    def _cold_start(
        self, index: PaperIndex, disliked: list[int], seen: set[int], k: int
    ) -> list[Recommendation]:
        popular = dict(self.feedback.popular(COLD_START_POOL))
        pool_ids = [pid for pid in popular if index.has(pid)]
        step = max(1, len(index) // COLD_START_POOL)
        pool = sorted({index.row(pid) for pid in pool_ids} | set(range(0, len(index), step)))
        pool = [r for r in pool if r not in seen]
        vectors = index.vectors[pool]
        counts = np.asarray([popular.get(index.ids[r], 0) for r in pool], dtype=np.float64)
        relevance = cold_start_relevance(vectors, counts)
        relevance += content_scores(vectors, vectors[:0], index.vectors[disliked]).score
        picks = mmr(vectors, relevance, k, diversity=0.5)
        hits = [(pool[int(p)], float(relevance[int(p)])) for p in picks]

        def reason(row: int) -> str:
            n = popular.get(index.ids[row], 0)
            if n:
                return f"popular: liked by {n} reader{'s' if n != 1 else ''}"
            return "a broad pick from the collection; like papers to personalise your list"
        return self._items(index, hits, reason)

    def _items(
        self,
        index: PaperIndex,
        hits: list[tuple[int, float]],
        reason: Callable[[int], str],
        because: Callable[[int], list[str]] = lambda _row: [],
    ) -> list[Recommendation]:
        papers = self.corpus.get_many([index.ids[row] for row, _ in hits])
        items = []
        for row, score in hits:
            pid = index.ids[row]
            paper = papers.get(pid)
            items.append(Recommendation(pid, paper.title if paper else pid, round(score, 4),
                                        reason(row), because(row)))
        return items


def rows_with_signal(index: PaperIndex, signals: list[Feedback], signal: Signal) -> list[int]:
    """Index rows of the papers given this signal (papers not indexed yet are left out)."""
    return [index.row(f.paper_id) for f in signals if f.signal == signal and index.has(f.paper_id)]


def _short(title: str, limit: int = 70) -> str:
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"

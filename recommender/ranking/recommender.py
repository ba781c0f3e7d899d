"""Recommender: the one engine behind the REST API, the digests and the evaluation.

It joins the corpus (what a paper is), the live index (where it sits in the content space),
the live collaborative model and the feedback store (what a user said), and ranks with
``reading_list.rank``.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from recommender.core.config import Settings
from recommender.core.errors import InvalidInput, NotFound
from recommender.core.ids import validate_paper_id, validate_user_id
from recommender.core.papers import EPOCH, Paper
from recommender.corpus.store import CorpusStore
from recommender.digest.links import LinkClaim, LinkSigner, load_secret
from recommender.digest.subscriptions import Subscription, SubscriptionStore, validate_subscription
from recommender.embedding.encoders import Embedder, shared_embedder
from recommender.feedback.store import Feedback, FeedbackStore, Signal
from recommender.index.content_space import centre_query
from recommender.index.paper_index import PaperIndex
from recommender.index.store import IndexStore, LiveIndex
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.rank import COLLABORATIVE_WEIGHT, Ranked, RankingContext, rank
from recommender.storage.redis_client import connect
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.versions import LiveVersion, VersionedDir

MAX_K = 200
MAX_OFFSET = 1000
LIKE_COUNTS_SECONDS = 5.0  # how stale the popularity counts may be
# Collaborative contribution worth telling the user about: a tenth of the most it can add.
CF_REASON_MIN = 0.1 * COLLABORATIVE_WEIGHT


@dataclass
class Recommendation:
    paper_id: str
    title: str
    score: float
    reason: str
    reasons: list[dict[str, Any]] = field(default_factory=list)
    because: list[str] = field(default_factory=list)  # ids of the liked papers behind it

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class ReadingList:
    user_id: str
    personalized: bool
    items: list[Recommendation]
    index_version: str
    model_version: str | None

    def to_dict(self) -> dict[str, object]:
        return {
            "user_id": self.user_id,
            "personalized": self.personalized,
            "index_version": self.index_version,
            "model_version": self.model_version,
            "items": [item.to_dict() for item in self.items],
        }


def check_k(k: int) -> int:
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}, got {k}")
    return k


class Recommender:
    def __init__(self, corpus: CorpusStore, index: LiveIndex,
                 collaborative: LiveVersion[CollaborativeModel], feedback: FeedbackStore,
                 embedder: Embedder, subscriptions: SubscriptionStore,
                 links: LinkSigner) -> None:
        self.corpus = corpus
        self.index = index
        self.collaborative = collaborative
        self.feedback = feedback
        self.embedder = embedder
        self.subscriptions = subscriptions
        self.links = links
        # (index version, model version) -> context without like counts; then the context
        # with like counts, and when those were read from Redis.
        self._contexts: dict[tuple[str, str | None], RankingContext] = {}
        self._counted: tuple[tuple[str, str | None], float, RankingContext] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> Recommender:
        models = VersionedDir(settings.collaborative_dir)
        client = connect(settings)
        keys = RedisKeys(settings.redis_namespace)
        return cls(
            CorpusStore(settings.corpus_path),
            LiveIndex(IndexStore(settings.index_dir), settings.index_check_seconds),
            LiveVersion(models, lambda v: CollaborativeModel.load(models.path(v)),
                        "collaborative model", "no model trained yet: run `paperrec train`",
                        settings.index_check_seconds),
            FeedbackStore(client, keys),
            shared_embedder(settings.model, settings.embed_batch_size,
                            settings.embed_backend),
            SubscriptionStore(client, keys),
            LinkSigner(load_secret(settings.secret_key, settings.data_dir)),
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
                if r >= 0 and r != row][:k]
        return self._plain_items(index, hits, "close in content")

    def search(self, query: str, k: int) -> list[Recommendation]:
        query = query.strip()
        if not query:
            raise InvalidInput("q must be a non-empty search text, e.g. ?q=federated+learning")
        if len(query) > 1000:
            raise InvalidInput(f"q is {len(query)} characters long; at most 1000 are allowed")
        index = self.index.get()
        vector = centre_query(self.embedder.encode([query]), index.space.mean)
        rows, scores = index.search(vector, check_k(k))
        hits = [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]
        return self._plain_items(index, hits, f"matches {query[:60]!r}")

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

    # --- a user's own data ----------------------------------------------------------------
    def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything stored about a user."""
        validate_user_id(user_id)
        subscription = self.subscriptions.get(user_id)
        return {
            "user_id": user_id,
            "feedback": [f.to_dict() for f in self.feedback.get(user_id)],
            "served": [{"paper_id": pid, "at": at}
                       for pid, at in self.feedback.served_with_times(user_id)],
            "subscription": subscription.to_dict() if subscription else None,
            "digests": [{"period": period, "at": float(value.split()[0]),
                         "message_id": value.split()[1]}
                        for period, value in sorted(self.subscriptions.digests(user_id).items())],
        }

    def erase_user(self, user_id: str) -> None:
        """Forget the user: feedback, served history, subscription and digest records."""
        self.feedback.erase_user(validate_user_id(user_id))

    # --- digest subscriptions and one-click links ----------------------------------------
    def subscribe(self, user_id: str, body: dict[str, Any], now: float) -> Subscription:
        validate_user_id(user_id)
        email, frequency, max_items = validate_subscription(body)
        return self.subscriptions.set(user_id, email, frequency, max_items, now)

    def subscription(self, user_id: str) -> Subscription:
        found = self.subscriptions.get(validate_user_id(user_id))
        if found is None:
            raise NotFound(f"user {user_id!r} has no digest subscription; create one with PUT")
        return found

    def unsubscribe(self, user_id: str) -> None:
        if not self.subscriptions.delete(validate_user_id(user_id)):
            raise NotFound(f"user {user_id!r} has no digest subscription")

    def follow_link(self, token: str, now: float) -> tuple[LinkClaim, str]:
        """Carry out what a signed email link says; returns it and a sentence for the page."""
        claim = self.links.verify(token, now)
        if claim.action == "unsubscribe":
            self.subscriptions.delete(claim.user_id)
            return claim, "You are unsubscribed: no more paperrec digests will be sent to you."
        assert claim.paper_id is not None
        title = self.paper(claim.paper_id).title
        self.feedback.set(claim.user_id, claim.paper_id, claim.action, now)
        if claim.action == "like":
            return claim, f"Recorded: more like \u201c{title}\u201d in your next reading lists."
        return claim, f"Recorded: not interested in \u201c{title}\u201d; papers like it will sink."

    # --- reading lists ------------------------------------------------------------------
    def recommend(
        self,
        user_id: str,
        k: int,
        *,
        now: float,
        offset: int = 0,
        diversity: float | None = None,
        since: dt.date | None = None,
        exclude_served: bool = False,
        record: bool = True,
    ) -> ReadingList:
        check_k(k)
        if not 0 <= offset <= MAX_OFFSET:
            raise InvalidInput(f"offset must be between 0 and {MAX_OFFSET}, got {offset}")
        if diversity is not None and not 0.0 <= diversity <= 1.0:
            raise InvalidInput(f"diversity must be between 0 and 1, got {diversity}")
        signals = self.user_feedback(user_id)
        index = self.index.get()
        ctx = self._context(index, now)
        liked = _rows(index, signals, "like")
        disliked = _rows(index, signals, "dislike")
        served = np.asarray([index.row(p) for p in self.feedback.served(user_id)
                             if index.has(p)], dtype=np.int64)
        since_day = None if since is None else float(since.toordinal() - EPOCH)
        ranked = rank(ctx, liked, disliked, k, offset=offset, diversity=diversity,
                      served=served, exclude_served=exclude_served, since_day=since_day)
        items = self._explained(index, ctx, ranked)
        if record:
            self.feedback.record_served(user_id, [item.paper_id for item in items], now)
        return ReadingList(user_id, ranked.personalized, items, index.version,
                           self.collaborative.version)

    def _context(self, index: PaperIndex, now: float) -> RankingContext:
        model = self.collaborative.get()
        key = (index.version, self.collaborative.version)
        with self._lock:
            if self._counted and self._counted[0] == key and (
                    now - self._counted[1] < LIKE_COUNTS_SECONDS):
                return self._counted[2]
            ctx = self._contexts.get(key)
            if ctx is None:
                ctx = RankingContext(index.vectors, index.space.neighbours,
                                     index.space.neighbour_sims, np.zeros(len(index), np.float32),
                                     index.ids, model, np.asarray(index.days), index.search)
                self._contexts = {key: ctx}  # older versions are no longer needed
            counts = np.zeros(len(index), np.float32)
            for paper_id, count in self.feedback.like_counts().items():
                if index.has(paper_id):
                    counts[index.row(paper_id)] = count
            counted = ctx.with_like_counts(counts)
            self._counted = (key, now, counted)
            return counted

    def _explained(self, index: PaperIndex, ctx: RankingContext,
                   ranked: Ranked) -> list[Recommendation]:
        ids = [index.ids[int(r)] for r in ranked.rows]
        liked_ids = {index.ids[int(r)] for r in ranked.nearest_like if r >= 0}
        papers = self.corpus.get_many(ids + sorted(liked_ids))
        items = []
        for pos, paper_id in enumerate(ids):
            row = int(ranked.rows[pos])
            parts: list[tuple[float, str, dict[str, Any]]] = []
            if ranked.nearest_like[pos] >= 0:
                liked_id = index.ids[int(ranked.nearest_like[pos])]
                liked = papers.get(liked_id)
                title = _short(liked.title if liked else liked_id)
                parts.append((float(ranked.content[pos]),
                              f"similar to '{title}' that you liked",
                              {"kind": "similar_to_liked", "paper_id": liked_id,
                               "similarity": round(float(ranked.content[pos]), 4)}))
            if ranked.collaborative[pos] > CF_REASON_MIN:
                parts.append((float(ranked.collaborative[pos]),
                              "readers with similar taste saved it",
                              {"kind": "similar_readers",
                               "weight": round(float(ranked.collaborative[pos]), 4)}))
            likes = int(ctx.like_counts[row])
            if likes:
                parts.append((float(ranked.popularity[pos]),
                              f"liked by {likes} reader{'s' if likes != 1 else ''}",
                              {"kind": "popular", "likes": likes}))
            # Words: the first two of content, collaborative, popular (data: all, by weight).
            words = "; ".join(text for _, text, _ in parts[:2]) or (
                "a broad pick from the collection; like papers to personalise your list")
            paper = papers.get(paper_id)
            items.append(Recommendation(
                paper_id, paper.title if paper else paper_id, round(float(ranked.scores[pos]), 4),
                words, [data for _, _, data in sorted(parts, key=lambda part: -part[0])],
                [d["paper_id"] for _, _, d in parts if d["kind"] == "similar_to_liked"]))
        return items

    def _plain_items(self, index: PaperIndex, hits: list[tuple[int, float]],
                     reason: str) -> list[Recommendation]:
        papers = self.corpus.get_many([index.ids[row] for row, _ in hits])
        return [Recommendation(index.ids[row], _title(papers.get(index.ids[row]), index.ids[row]),
                               round(score, 4), reason) for row, score in hits]


def _rows(index: PaperIndex, signals: list[Feedback], signal: Signal) -> np.ndarray:
    """Index rows of the papers given this signal (papers not indexed yet are left out)."""
    return np.asarray([index.row(f.paper_id) for f in signals
                       if f.signal == signal and index.has(f.paper_id)], dtype=np.int64)


def _title(paper: Paper | None, fallback: str) -> str:
    return paper.title if paper else fallback


def _short(title: str, limit: int = 70) -> str:
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"

"""Recommender: papers, similar papers, search and reading lists, over what is served now.

It joins the corpus (what a paper is), the live index (where it sits in the content space),
the live collaborative model and the feedback store (what a user said), ranks with
``rank.rank`` and explains with ``explain.explain``. Inputs are checked at the API boundary
(service/api/); ids are checked where they become Redis keys.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated

import numpy as np
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from recommender.core.errors import IndexNotReady, NotFound
from recommender.core.ids import UserId, validate_paper_id
from recommender.core.papers import EPOCH, Paper
from recommender.core.search_query import SearchQuery, parse_query
from recommender.corpus.store import CorpusStore
from recommender.embedding.cache import EmbeddingCache
from recommender.embedding.encoders import TextEncoder
from recommender.feedback.store import Feedback, FeedbackStore, ListState, Mark, Signal
from recommender.index.content_space import centre_query
from recommender.index.paper_index import PaperIndex
from recommender.index.store import LiveIndex
from recommender.online.events import EventLog, ServedList, Surface, new_list_id
from recommender.online.experiments import Experiment, ExperimentStore, base_variant
from recommender.ranking.calibration import Calibration, default_for
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.context import ContentStatistics, LiveContext, RankingContext
from recommender.ranking.explain import Recommendation, explain, followed, plain
from recommender.ranking.interests import rank_interests
from recommender.ranking.interleave import merge, team_draft
from recommender.ranking.item_view import standing, venue, year_of
from recommender.ranking.onboarding import Question, questions
from recommender.ranking.rank import Ranked
from recommender.ranking.reader_rules import DAY_SECONDS, plan_rules
from recommender.ranking.request import ListRequest
from recommender.ranking.scoring import close_likes, score
from recommender.ranking.search import (
    AUTHOR_POOL,
    MAX_NAME_WORDS,
    QUERY_VECTORS,
    SEMANTIC_POOL,
    WORD_POOL,
    Candidates,
    SearchHit,
    fuse,
    matches,
)
from recommender.ranking.search import reason as search_reason
from recommender.ranking.topics import TopicCache
from recommender.ranking.variants import BUILT_IN, PRODUCTION, Variant, variant_named
from recommender.ranking.why_not import LIST_DEPTH, WhyNot, why_not
from recommender.storage.versions import LiveVersion

NEW_DAYS = 7  # a paper published in the week before it is served is new (the report's figures)


@dataclass(frozen=True)
class ReadingList:
    """A user's list, as the API serves it (``left_out_as_unlikely`` only for the digests)."""

    user_id: UserId
    personalized: Annotated[bool, Field(description=(
        "False: the user has no usable likes yet, so the list is what is popular and broad."))]
    items: list[Recommendation]
    index_version: str
    model_version: str | None
    # Items below min_probability (the list is that much shorter).
    left_out_as_unlikely: Annotated[int, Field(exclude=True)] = 0
    # What the reader had done with each listed paper that has a mark (liked, disliked, set
    # aside), from the read the list was made from: the pages show it without reading again.
    # Not part of the API's answer, nor of its schema.
    marks: Annotated[dict[str, Mark], Field(exclude=True), SkipJsonSchema()] = field(
        default_factory=dict)
    list_id: Annotated[str, Field(description=(
        "This list's id: send it back with feedback on its papers (`list_id`), so the "
        "service learns which lists work (the impression log).")), ] = ""
    # The list as the impression log records it (``recommender.online.events``): logged when
    # served with a surface, else by the caller once it is delivered (a digest once sent).
    served: Annotated[ServedList | None, Field(exclude=True), SkipJsonSchema()] = None


class Recommender:
    def __init__(self, corpus: CorpusStore, index: LiveIndex,
                 collaborative: LiveVersion[CollaborativeModel], feedback: FeedbackStore,
                 embedder: TextEncoder, embedding_cache: EmbeddingCache | None = None, *,
                 events: EventLog | None = None, experiments: ExperimentStore | None = None,
                 variants: Mapping[str, Variant] = BUILT_IN) -> None:
        """``events``: where the lists served are logged; ``experiments``: the experiment
        running, if any; ``variants``: the ranking variants it may name."""
        self._corpus = corpus
        self._events = events
        self._experiments = experiments
        self._variants = variants
        self._embedding_cache = embedding_cache  # vectors of liked papers not indexed yet
        self._index = index
        self._collaborative = collaborative
        self._feedback = feedback
        self._embedder = embedder
        self._context = LiveContext()
        self._topics = TopicCache()
        self._floor: tuple[str, float] = ("", 0.0)  # (index version, its noise floor)
        # A search text's embedding, kept for the next search of the same text (the next
        # page, the same query from the page and the API): a model run is most of a search's
        # time. Bounded: QUERY_VECTORS texts (``parse_query`` cuts each to MAX_QUERY_CHARS).
        self._query_vector = functools.lru_cache(maxsize=QUERY_VECTORS)(self._encode_query)

    def paper(self, paper_id: str, viewer: str | None = None) -> Paper:
        """The paper, as ``viewer`` may see it: a reader's upload not verified yet is there
        for its uploaders only (``CorpusStore.hidden_from``; None: for nobody)."""
        paper = self._corpus.get(validate_paper_id(paper_id))
        if paper is None or self._corpus.hidden_from(paper.id, viewer):
            raise NotFound(f"no paper with id {paper_id!r}; ingest it with `paperrec ingest`")
        return paper

    def similar(self, paper_id: str, k: int, viewer: str | None = None) -> list[Recommendation]:
        self.paper(paper_id, viewer)
        index = self._index.get()
        row = index.row(paper_id)
        rows, scores = index.search(index.vectors[row : row + 1], k + 1)
        hits = [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True)
                if r >= 0 and r != row][:k]
        return self._described(self._plain(index, hits, "close in content"))

    def search(self, text: str, k: int, viewer: str | None = None) -> list[SearchHit]:
        """Hybrid search (``search.py``): the papers ``viewer`` may see (their own uploads
        not verified yet included) that match ``text`` (``parse_query``: words, quoted
        phrases, ``au:``, ``ti:``, ``year:``), an exact title first, then an author the
        query names, then words and meaning fused; at most ``k``."""
        query = parse_query(text)
        if query.empty:
            if query.years is None:
                return []
            ids = self._corpus.papers_of_years(query.years, k, viewer)
            papers = self._corpus.get_many(ids)
            return [SearchHit(pid, papers[pid].title, 0.0, f"published in {papers[pid].year}")
                    for pid in ids if pid in papers]
        plain_words = not query.fielded and not query.phrases
        found = Candidates(
            title=(self._corpus.search_title(query.free_words, viewer, query.years)
                   if not query.fielded else []),
            author=self._by_author(query, viewer)
            if plain_words and len(query.words) <= MAX_NAME_WORDS else [],
            words=[pid for pid, _ in self._corpus.search_words(query, WORD_POOL, viewer)],
            meaning=self.meaning(query, viewer) if query.text else [])
        fused = fuse(found, k, meaning_only=not query.fielded,
                     noise_floor=self._noise_floor(self._index.get()))
        papers = self._corpus.get_many([pid for pid, _, _, _ in fused])
        return [SearchHit(pid, papers[pid].title, score,
                          search_reason(how, papers[pid], query), how,
                          matches(papers[pid], query),
                          None if cosine is None else round(cosine, 4))
                for pid, score, how, cosine in fused if pid in papers]

    def _by_author(self, query: SearchQuery, viewer: str | None) -> list[str]:
        """The papers of an author the query names: its words as a name ("hinton",
        "geoffrey hinton"), else one of its words as a name and the others anywhere in the
        paper ("hinton capsules": Hinton's papers with "capsules"), best first."""
        found = self._corpus.search_author(query.words, AUTHOR_POOL, viewer, query.years)
        required = query.required_words
        if not found and len(required) > 1:
            for name in dict.fromkeys(required):
                found += self._corpus.search_author(
                    (name,), AUTHOR_POOL, viewer, query.years,
                    also=tuple(w for w in required if w != name))
            found.sort(key=lambda hit: -hit[1])
        return list(dict.fromkeys(pid for pid, _ in found))[:AUTHOR_POOL]

    def _noise_floor(self, index: PaperIndex) -> float:
        """How similar unrelated papers of this index version look (computed once per
        version): the bar under which a paper only the meaning search found is left out."""
        version, floor = self._floor
        if version != index.version:
            floor = ContentStatistics.of(index.vectors).noise_floor
            self._floor = (index.version, floor)
        return floor

    def _encode_query(self, text: str) -> np.ndarray:
        """The model's embedding of a search text (1 x dimension), read-only: it is shared
        by every search of the same text (``_query_vector``)."""
        vector = self._embedder.encode([text])
        vector.flags.writeable = False
        return vector

    def meaning(self, query: SearchQuery, viewer: str | None) -> list[tuple[str, float]]:
        """(id, cosine) of the papers closest in meaning to the query's free text, best
        first: the index's nearest (in ``query.years`` when given), and for ``viewer`` the
        papers they uploaded that are not verified (so not indexed) yet."""
        index = self._index.get()
        encoded = self._query_vector(query.text)
        if encoded.shape[1] != index.vectors.shape[1]:
            raise IndexNotReady(f"the index was built with another embedding model "
                                f"({index.meta.get('embedding', index.model)}) than the one "
                                f"configured ({self._embedder.variant}): run "
                                f"`paperrec rebuild-index --full`")
        vector = centre_query(encoded, index.space.mean)
        rows, scores = index.search(vector, SEMANTIC_POOL)
        hits = [(index.ids[int(r)], float(s), float(index.days[int(r)]))
                for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]
        uploaded = self._corpus.pending_of(viewer) if viewer else []
        own_ids, own_vectors = self._cached_vectors(index, uploaded)
        if own_ids:  # the index's score: inner product of centred unit vectors
            own_papers = self._corpus.get_many(own_ids)
            hits += [(pid, float(s), own_papers[pid].day)
                     for pid, s in zip(own_ids, own_vectors @ vector[0], strict=True)]
            hits.sort(key=lambda hit: -hit[1])
        if query.years is not None:
            low = dt.date(query.years[0], 1, 1).toordinal() - EPOCH
            high = dt.date(query.years[1] + 1, 1, 1).toordinal() - EPOCH
            hits = [hit for hit in hits if low <= hit[2] < high]
        return [(pid, similarity) for pid, similarity, _ in hits]

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
        min_probability: float = 0.0,
        include_set_aside: bool = False,
        served_before: float | None = None,
        record: bool = True,
        collection: str | None = None,
        surface: Surface | None = None,
    ) -> ReadingList:
        """The user's reading list; ``record`` remembers it as served (the API and the list
        page do; a digest records only what it mailed). ``surface``: the list is logged as
        served there (``recommender.online.events``; without it, ``ReadingList.served`` is
        what the caller logs once it delivers the list). The list is ranked by production,
        or as the experiment running says (``recommender.online.experiments``).

        The user's rules apply (``reader_rules``): muted papers never appear, new papers of
        followed authors and keywords come first. Each item has its calibrated
        ``probability``; the model's items below ``min_probability`` are left out (the list is
        then shorter than ``k``; followed papers always stay, and a list without likes is not
        cut: all its items have the same, base-rate probability).

        The same list all day (UTC): papers count as served (pushed down, or left out with
        ``exclude_served``) when first served before ``served_before``, by default the start
        of the UTC day of ``now`` (``day_start``), so what a list serves moves down the next
        day, not on the next call. Papers the reader set aside are left out unless
        ``include_set_aside``. Asking again with the next ``offset`` continues the list.

        ``collection``: the list of one of the reader's collections, ranked from its papers
        and the reader's dislikes (NotFound for a collection they do not have). Without it,
        a reader with two collections or more gets every one of them on the list
        (``interests.rank_interests``)."""
        index, ctx, calibration = self._serving(now)
        request, groups, state = self._request(
            user_id, index, now, since, k=k, offset=offset, diversity=diversity,
            exclude_served=exclude_served, min_probability=min_probability,
            include_set_aside=include_set_aside, served_before=served_before,
            collection=collection)
        experiment = self._experiments.current() if self._experiments is not None else None
        ranked, teams = self._ranked(ctx, request, groups, experiment, user_id, now)
        put_first, _, _ = request.page()
        all_ids = index.ids
        if request.unindexed_ids:  # a like not indexed yet may be the closest: a reason too
            ranked, all_ids = _nearest_unindexed(ranked, ctx, index.ids, request)
        ids = [index.ids[int(r)] for r in ranked.rows]
        liked_ids = sorted({all_ids[int(r)] for r in ranked.nearest_like if r >= 0})
        titles = self._corpus.titles(ids + liked_ids + [index.ids[row] for row, _ in put_first])
        items = _followed_items(ctx, request, calibration, ranked, index.ids, titles)
        probability = calibration.probability(ranked.scores / ranked.scale, request.likes)
        ranked_items = explain(all_ids, ctx, ranked, titles, probability)
        # Without likes every item has the base rate: nothing to tell them apart, so a
        # newcomer's list (and first digest) is not cut.
        floor = request.min_probability if ranked.personalized else 0.0
        kept = [i for i, item in enumerate(ranked_items) if (item.probability or 0.0) >= floor]
        likely = [ranked_items[i] for i in kept]
        items = self._described(items + likely, ranked.personalized, first=request.offset + 1)
        if record:
            self._feedback.record_served(user_id, [item.paper_id for item in items], now)
        rows = np.concatenate([np.asarray([row for row, _ in put_first], np.int64),
                               ranked.rows[kept]])
        z = [math.nan] * len(put_first) + [float(ranked.scores[i] / ranked.scale) for i in kept]
        served = ServedList(
            new_list_id(), user_id, surface or "", now, tuple(i.paper_id for i in items),
            tuple([_followed_variant(experiment, user_id)] * len(put_first)
                  + [teams[i] for i in kept]),
            tuple(z), tuple(float(i.probability or 0.0) for i in items), request.likes,
            tuple(_new(ctx, rows, now)), request.offset, experiment.id if experiment else "")
        if surface is not None and self._events is not None:
            self._events.served(served)
        return ReadingList(user_id, ranked.personalized, items, index.version,
                           self._collaborative.version, len(ranked_items) - len(likely),
                           state.marks([item.paper_id for item in items]), served.list_id,
                           served)

    def _ranked(self, ctx: RankingContext, request: ListRequest, groups: list[np.ndarray],
                experiment: Experiment | None, user_id: str,
                now: float) -> tuple[Ranked, list[str]]:
        """The model's part of the list, and the variant that put each paper there:
        production's, the reader's side of an A/B experiment, or production and the
        candidate interleaved by team draft (the coins the same all day)."""
        if experiment is None:
            ranked = self._variants[PRODUCTION].rank(ctx, request, groups)
            return ranked, [PRODUCTION] * len(ranked.rows)
        if experiment.mode == "ab":
            name = experiment.arm(user_id)
            ranked = self._variant(name).rank(ctx, request, groups)
            return ranked, [name] * len(ranked.rows)
        names = (experiment.production, experiment.candidate)
        _, offset, k = request.page()
        want = offset + k
        start = replace(request, offset=0, k=len(request.plan.followed) + want)
        a = self._variant(names[0]).rank(ctx, start, groups)
        b = (a if base_variant(names[1]) == names[0]
             else self._variant(names[1]).rank(ctx, start, groups))
        teams, where = team_draft(a.rows, b.rows, want, experiment.seed(user_id, day_start(now)))
        ranked = merge(a, b, teams[offset:want], where[offset:want])
        return ranked, [names[t] for t in teams[offset:want]]

    def _variant(self, name: str) -> Variant:
        """The variant of this name (an experiment naming one no longer configured: an
        error that says so); an A/A check's "hybrid#B" is "hybrid"."""
        name = base_variant(name)
        found = self._variants.get(name)
        return found if found is not None else variant_named(name)

    def why_not(
        self,
        user_id: str,
        paper_id: str,
        *,
        now: float,
        k: int = 20,
        offset: int = 0,
        diversity: float | None = None,
        since: dt.date | None = None,
        exclude_served: bool = False,
        min_probability: float = 0.0,
        include_set_aside: bool = False,
    ) -> WhyNot:
        """Where the paper stands on the list ``recommend`` gives with these settings (the
        same request: the page ``offset``, ``k``, its diversity), its score part by part and
        what keeps it out (``why_not.py``). Records nothing. NotFound for a paper not in the
        corpus, or not indexed yet."""
        paper = self.paper(paper_id, viewer=user_id)
        index, ctx, calibration = self._serving(now)
        request, groups, _ = self._request(user_id, index, now, since, k=k, offset=offset,
                                           diversity=diversity, exclude_served=exclude_served,
                                           min_probability=min_probability,
                                           include_set_aside=include_set_aside)
        row = index.row(paper.id)  # NotFound, saying to rebuild the index
        # The model's part of the list from its start, as ``recommend`` ranks it (every
        # collection's list interleaved), down to this page's end or deeper (to say where a
        # paper after the page stands).
        listed = rank_interests(ctx, replace(request, offset=0, k=max(offset + k, LIST_DEPTH)),
                                groups).rows
        return why_not(ctx, request, paper, row, listed, calibration=calibration,
                       titles=self._corpus.titles, user_id=user_id)

    def questions(self, user_id: str, k: int, *, now: float) -> list[tuple[str, str, Question]]:
        """A new reader's next ``k`` questions (``onboarding.questions``) as (paper id,
        title, question), over the topics of the index served now (found once per version).
        Records nothing."""
        index, ctx, calibration = self._serving(now)
        request, _, _ = self._request(user_id, index, now, None, k=k, exclude_served=False,
                                   min_probability=0.0, include_set_aside=False)
        topics = self._topics.get(index.version, ctx.vectors, ctx.popularity, ctx.popular_rows)
        asked = questions(ctx, topics, calibration, request, k)
        ids = [index.ids[q.row] for q in asked]
        titles = self._corpus.titles(ids)
        return [(pid, titles.get(pid, pid), q) for pid, q in zip(ids, asked, strict=True)]

    def calibration(self, now: float) -> Calibration:
        """The calibration the lists are served with now (the probability each item shows)."""
        return self._serving(now)[2]

    def _serving(self, now: float) -> tuple[PaperIndex, RankingContext, Calibration]:
        """The index, the ranking context and the calibration served now."""
        index = self._index.get()
        model = self._collaborative.get()
        ctx = self._context.get(index, model, self._collaborative.version,
                                self._feedback.like_counts, now)
        calibration = model.calibration if model is not None else default_for(index.model)
        return index, ctx, calibration

    def _request(self, user_id: str, index: PaperIndex, now: float, since: dt.date | None, *,
                 k: int, offset: int = 0, diversity: float | None = None,
                 exclude_served: bool, min_probability: float, include_set_aside: bool,
                 served_before: float | None = None,
                 collection: str | None = None
                 ) -> tuple[ListRequest, list[np.ndarray], ListState]:
        """The user's list as asked, made from one read of their feedback, served papers,
        rules, papers set aside and collections, over ``index``; served: first served before
        ``served_before`` (by default the start of the UTC day of ``now``). And the liked rows
        of each of their collections, the interests the list keeps visible (none for a
        collection's list); and what was read."""
        state = self._feedback.for_list(user_id)
        signals = state.signals
        liked, disliked = _rows(index, signals, "like"), _rows(index, signals, "dislike")
        hidden = np.zeros(0, np.int64)
        if collection is not None:
            if collection not in state.collections:
                raise NotFound(f"user {user_id!r} has no collection {collection!r}; "
                               f"GET /v1/users/{user_id}/collections lists theirs")
            members = state.in_collection(collection)
            signals = [f for f in signals if f.signal == "dislike" or f.paper_id in members]
            hidden = liked
            liked = _rows(index, signals, "like")
        cutoff = day_start(now) if served_before is None else served_before
        served = index.rows_of(pid for pid, at in state.served.items() if at < cutoff)
        set_aside = index.rows_of([] if include_set_aside else state.set_aside)
        since_day = None if since is None else float(since.toordinal() - EPOCH)
        plan = plan_rules(self._corpus, index, state.rules, now=now, since_day=since_day, never=(
            np.concatenate([liked, hidden, disliked, set_aside]
                           + ([served] if exclude_served else []))))
        unindexed_ids, liked_vectors = self._unindexed_likes(index, signals)
        request = ListRequest(liked, k, disliked=disliked, offset=offset, diversity=diversity,
                              served=served, exclude_served=exclude_served, set_aside=set_aside,
                              since_day=since_day, min_probability=min_probability, plan=plan,
                              rules=tuple(state.rules), liked_vectors=liked_vectors,
                              unindexed_ids=tuple(unindexed_ids),
                              hidden=np.setdiff1d(hidden, liked))
        groups = [] if collection is not None else [
            index.rows_of(sorted(state.in_collection(cid))) for cid in sorted(state.collections)]
        return request, groups, state

    def _unindexed_likes(self, index: PaperIndex,
                         signals: list[Feedback]) -> tuple[list[str], np.ndarray]:
        """Content-space vectors of the liked papers the index has no row for yet (imported
        since the build), from their cached embeddings under the index's model variant;
        papers not embedded yet (or not in the corpus) are left out."""
        missing = [f.paper_id for f in signals if f.signal == "like" and not index.has(f.paper_id)]
        return self._cached_vectors(index, missing)

    def _cached_vectors(self, index: PaperIndex,
                        paper_ids: list[str]) -> tuple[list[str], np.ndarray]:
        """Content-space vectors of papers the index has no row for, from their cached
        embeddings under the index's model variant; those not embedded yet (or not in the
        corpus) are left out."""
        dim = index.vectors.shape[1]
        if not paper_ids or self._embedding_cache is None:
            return [], np.zeros((0, dim), np.float32)
        papers = self._corpus.get_many(paper_ids)
        raw = self._embedding_cache.get(str(index.meta.get("embedding", index.model)),
                                        [paper.content_hash for paper in papers.values()])
        found = [(pid, raw[paper.content_hash]) for pid, paper in papers.items()
                 if paper.content_hash in raw and raw[paper.content_hash].shape == (dim,)]
        if not found:
            return [], np.zeros((0, dim), np.float32)
        return ([pid for pid, _ in found],
                centre_query(np.stack([vector for _, vector in found]), index.space.mean))

    def _described(self, items: list[Recommendation], personalized: bool | None = None, *,
                   first: int = 1) -> list[Recommendation]:
        """The items with their place (from ``first``), their authors, year and venue from
        the corpus, and for a reading list (``personalized`` given) their standing in words
        (``item_view.standing``)."""
        papers = self._corpus.get_many([item.paper_id for item in items])
        described = []
        for place, item in enumerate(items, start=first):
            paper = papers.get(item.paper_id)
            described.append(replace(
                item, rank=place,
                standing="" if personalized is None else standing(
                    place, item.close_likes, personalized),
                authors=list(paper.authors) if paper else [],
                year=year_of(paper) if paper else None, venue=venue(paper) if paper else None))
        return described

    def _plain(self, index: PaperIndex, hits: list[tuple[int, float]],
               reason: str) -> list[Recommendation]:
        titles = self._corpus.titles([index.ids[row] for row, _ in hits])
        return plain(index.ids, hits, titles, reason)


def _followed_variant(experiment: Experiment | None, user_id: str) -> str:
    """The variant credited with the followed papers a list puts first: the list's own, or
    none of an interleaved list's two ("followed": both would put them first)."""
    if experiment is None:
        return PRODUCTION
    return experiment.arm(user_id) if experiment.mode == "ab" else "followed"


def _new(ctx: RankingContext, rows: np.ndarray, now: float) -> list[bool]:
    """Which rows were published in the week before ``now`` (days since 1970 in
    ``ctx.dates``; unknown dates are not new)."""
    if ctx.dates is None or not len(rows):
        return [False] * len(rows)
    today = now / DAY_SECONDS
    return [bool(today - NEW_DAYS <= d <= today) for d in np.asarray(ctx.dates)[rows]]


def day_start(now: float) -> float:
    """The start of the UTC day of ``now`` (unix time): papers served since then are not
    "served" yet for the lists of that day."""
    return now - now % DAY_SECONDS


def _rows(index: PaperIndex, signals: list[Feedback], signal: Signal) -> np.ndarray:
    """Index rows of the papers given this signal (papers not indexed yet are left out)."""
    return index.rows_of(f.paper_id for f in signals if f.signal == signal)


def _followed_items(ctx: RankingContext, request: ListRequest, calibration: Calibration,
                   ranked: Ranked, ids: list[str],
                   titles: Mapping[str, str]) -> list[Recommendation]:
    """The followed papers on the page, put first by the reader's rules: each with the model's
    probability (scored apart, as they were not ranked) and scoring at least what comes after
    them (the top of ``ranked``)."""
    put_first, _, _ = request.page()
    if not put_first:
        return []
    scored = score(ctx, request, rows=np.asarray([row for row, _ in put_first], dtype=np.int64))
    probability = calibration.probability(scored.total / scored.scale, request.likes)
    top = max([1.0, *(float(s) for s in ranked.scores[:1])])
    near = close_likes(ctx, scored.vectors, request.liked, request.liked_vectors)
    return [followed(ids[row], titles, rule.kind, rule.value, top, float(p), int(n))
            for (row, rule), p, n in zip(put_first, probability, near, strict=True)]


def _nearest_unindexed(ranked: Ranked, ctx: RankingContext, ids: list[str],
                       request: ListRequest) -> tuple[Ranked, list[str]]:
    """The ranked papers' nearest likes, the likes not indexed yet included: those are
    numbered after the index's rows, in the id list returned (for ``explain``)."""
    vectors = np.asarray(request.liked_vectors)
    sims = np.asarray(ctx.vectors[ranked.rows], dtype=np.float32) @ vectors.T
    best = sims.argmax(axis=1) if len(ranked.rows) else np.zeros(0, np.int64)
    best_sim = sims[np.arange(len(best)), best]
    closer = (ranked.nearest_like < 0) | (best_sim > ranked.nearest_similarity)
    return replace(ranked,
                   nearest_like=np.where(closer, len(ids) + best, ranked.nearest_like),
                   nearest_similarity=np.where(closer, best_sim, ranked.nearest_similarity),
                   ), list(ids) + list(request.unindexed_ids)

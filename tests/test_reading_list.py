"""The ranking core on synthetic vectors with known answers (no Redis, no files)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from recommender.index.content_space import build_content_space
from recommender.index.paper_index import PaperIndex
from recommender.index.store import build_faiss
from recommender.ranking import candidates, cost
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.context import POPULAR_POOL, RankingContext, Search, context_for
from recommender.ranking.diversity import mmr
from recommender.ranking.rank import rank
from recommender.ranking.request import ListRequest

DIM = 32


def build_context(vectors: np.ndarray, like_counts: np.ndarray,
                  model: CollaborativeModel | None, item_ids: list[str]) -> RankingContext:
    """The service's context (``context_for``) over an exact index of these vectors, built in
    memory by the functions ``IndexStore.publish`` uses."""
    n = len(vectors)
    space = build_content_space(vectors, exact_max=n)
    index = PaperIndex("test", item_ids, space, np.full(n, np.nan), build_faiss(space.vectors, n),
                       {})
    return context_for(index, model, like_counts)


def cluster(rng: np.random.Generator, centre: np.ndarray, n: int, spread: float) -> np.ndarray:
    points = centre + spread * rng.normal(size=(n, DIM)) / np.sqrt(DIM)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def two_topics(tight_a: float = 0.2, loose_b: float = 0.6, noise: int = 60) -> RankingContext:
    """Rows 0-19: topic A (tight), rows 20-39: topic B (looser), then unrelated papers."""
    rng = np.random.default_rng(7)
    axes = np.eye(DIM)
    vectors = np.vstack([
        cluster(rng, axes[0], 20, tight_a),
        cluster(rng, axes[1], 20, loose_b),
        cluster(rng, np.zeros(DIM), noise, np.sqrt(DIM)),
    ]).astype(np.float32)
    n = len(vectors)
    return build_context(vectors, np.zeros(n), None, [f"p{i}" for i in range(n)])


def rows(ranked_rows: np.ndarray) -> list[int]:
    return [int(r) for r in ranked_rows]


def exact_search(vectors: np.ndarray, calls: list[int]) -> Search:
    """Brute-force top-k, standing in for the FAISS index; ``calls`` gets each batch size."""

    def search(queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        calls.append(len(queries))
        scores = queries @ vectors.T
        top = np.argsort(-scores, axis=1)[:, :k]
        return top, np.take_along_axis(scores, top, axis=1)

    return search


def topics(seed: int, count: int, size: int, spread: float, noise: int) -> RankingContext:
    """``count`` topics of ``size`` papers (rows t * size ...), then unrelated papers."""
    rng = np.random.default_rng(seed)
    axes = np.eye(DIM)
    vectors = np.vstack([cluster(rng, axes[t], size, spread) for t in range(count)]
                        + [cluster(rng, np.zeros(DIM), noise, np.sqrt(DIM))]).astype(np.float32)
    return build_context(vectors, np.zeros(len(vectors)), None,
                         [f"p{i}" for i in range(len(vectors))])


def searching(ctx: RankingContext, search: Search) -> RankingContext:
    """The same papers over an approximate index whose search is ``search``."""
    return RankingContext(ctx.vectors, ctx.neighbours, ctx.neighbour_sims, ctx.like_counts,
                          ctx.item_ids, dates=ctx.dates, search=search)


def test_papers_on_the_liked_topic_come_first_and_rated_papers_never() -> None:
    ctx = two_topics()
    top = rows(rank(ctx, ListRequest(np.array([0, 1]), 100, disliked=np.array([50]))).rows)
    assert all(r < 20 for r in top[:18])
    assert not {0, 1, 50} & set(top)


def test_a_disliked_topic_sinks_below_the_liked_one() -> None:
    ctx = two_topics(tight_a=0.4, loose_b=0.4)
    liked = np.array([0, 20])  # one paper of each topic
    before = rows(rank(ctx, ListRequest(liked, 20)).rows)
    assert {r < 20 for r in before[:10]} == {True, False}  # both topics near the top
    # Two dislikes in topic B.
    after = rows(rank(ctx, ListRequest(liked, 100, disliked=np.array([21, 22]))).rows)
    b_positions = [i for i, r in enumerate(after) if 20 <= r < 40]
    a_positions = [i for i, r in enumerate(after) if r < 20]
    assert max(a_positions) < min(b_positions)


def test_diversity_spreads_the_top_ten_across_two_interests() -> None:
    ctx = two_topics(tight_a=0.6, loose_b=0.6)
    # Mostly topic A, some topic B. The content score is the mean over the likes, so an
    # interest counts by its share of them: with one like in four, B falls below unrelated
    # papers and out of the pool diversity re-ranks (docs/benchmarks/ranking.md: the mean has a
    # cost).
    liked = np.array([0, 1, 2, 20, 21])
    focused = rows(rank(ctx, ListRequest(liked, 10, diversity=0.0)).rows)
    spread = rows(rank(ctx, ListRequest(liked, 10, diversity=1.0)).rows)
    assert sum(20 <= r < 40 for r in focused) == 0  # the main topic crowds out the other
    assert sum(r < 20 for r in spread) >= 3 and sum(20 <= r < 40 for r in spread) >= 3


def test_served_papers_are_pushed_down_or_excluded() -> None:
    ctx = two_topics()
    liked = np.array([0])
    first = rows(rank(ctx, ListRequest(liked, 5)).rows)
    pushed = rows(rank(ctx, ListRequest(liked, 5, served=np.array(first[:2]))).rows)
    assert pushed[:3] == first[2:5]
    excluded = rank(ctx, ListRequest(liked, 200, served=np.array(first), exclude_served=True))
    assert not set(first) & set(rows(excluded.rows))
    assert len(excluded.rows) == len(ctx.item_ids) - 1 - len(first)


def test_offset_pages_through_the_same_ranking() -> None:
    ctx = two_topics()
    whole = rows(rank(ctx, ListRequest(np.array([0, 20]), 10)).rows)
    second = rows(rank(ctx, ListRequest(np.array([0, 20]), 5, offset=5)).rows)
    assert second == whole[5:10]


def test_since_keeps_only_papers_with_a_date_on_or_after_it() -> None:
    ctx = two_topics()
    days = np.full(len(ctx.item_ids), np.nan)
    days[:10] = 20_000.0
    days[10:20] = 19_000.0
    dated = RankingContext(ctx.vectors, ctx.neighbours, ctx.neighbour_sims, ctx.like_counts,
                           ctx.item_ids, dates=days)
    got = rows(rank(dated, ListRequest(np.array([0]), 50, since_day=19_500.0)).rows)
    assert sorted(got) == list(range(1, 10))


def test_a_user_without_likes_gets_popular_papers_first_then_a_spread() -> None:
    ctx = two_topics()
    counts = np.zeros(len(ctx.item_ids))
    counts[[30, 5]] = [9, 3]
    ranked = rank(ctx.with_like_counts(counts), ListRequest(np.array([], int), 6))
    assert not ranked.personalized
    top = rows(ranked.rows)
    assert top[:2] == [30, 5]
    assert {r < 20 for r in top} == {True, False}


def test_mmr_without_diversity_keeps_relevance_order() -> None:
    vectors = np.eye(3, dtype=np.float32)
    assert mmr(vectors, np.array([0.9, 0.8, 0.1]), 3, diversity=0.0).tolist() == [0, 1, 2]


def test_a_withheld_co_liked_paper_surfaces_through_collaborative_filtering() -> None:
    # Thirty readers like most of A0..A9, thirty most of B0..B9; content says nothing (every
    # paper has the same embedding). A user who liked A0..A4 should get A5..A9 first.
    n = 40
    item_ids = [f"B{i}" for i in range(20)] + [f"A{i}" for i in range(20)]
    likes = {f"a{u}": [f"A{i}" for i in range(10) if (i + u) % 7 != 0] for u in range(30)}
    likes |= {f"b{u}": [f"B{i}" for i in range(10) if (i + u) % 7 != 0] for u in range(30)}
    vectors = np.ones((n, 8), dtype=np.float32) / np.sqrt(8)
    liked = np.arange(20, 25)  # A0..A4
    withheld = {item_ids.index(f"A{i}") for i in range(5, 10)}

    def positions(model: CollaborativeModel | None) -> tuple[list[int], np.ndarray]:
        ctx = build_context(vectors, np.zeros(n), model, item_ids)
        ranked = rank(ctx, ListRequest(liked, n))
        order = [int(r) for r in ranked.rows]
        return sorted(order.index(r) for r in withheld), ranked.collaborative[
            [order.index(r) for r in sorted(withheld)]]

    with_cf, lift = positions(CollaborativeModel.fit(likes, seed=0))
    without_cf, _ = positions(None)
    assert with_cf == [0, 1, 2, 3, 4] and (lift > 0).all()
    assert without_cf[0] >= 5  # ties in content alone put B papers first


def test_candidates_from_each_liked_paper_match_scoring_every_paper(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A corpus this small is cheaper to score whole: price scanning up to take the other path.
    monkeypatch.setattr(cost, "SCAN_US_PER_PAPER", 1e6)
    ctx = two_topics(tight_a=0.6, loose_b=0.9, noise=400)
    liked = np.array([0, 1, 20])  # two interests
    everything = rows(rank(ctx, ListRequest(liked, 10)).rows)
    spread = rows(rank(ctx, ListRequest(liked, 10, diversity=1.0)).rows)

    large = searching(ctx, exact_search(ctx.vectors, []))
    assert rows(rank(large, ListRequest(liked, 10)).rows) == everything
    assert rows(rank(large, ListRequest(liked, 10, diversity=1.0)).rows) == spread
    assert {r < 20 for r in spread} == {True, False}  # both interests are served


def test_many_likes_cost_one_search_and_lose_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader with 36 likes across twelve topics: the candidate path makes one search (for
    their direction, a mix of all twelve), and its walk of the neighbour graph from the likes
    ranks exactly as scoring every paper does."""
    monkeypatch.setattr(cost, "SCAN_US_PER_PAPER", 1e6)  # take the candidate path
    ctx = topics(3, count=12, size=15, spread=0.5, noise=600)
    liked = np.array([15 * t + i for t in range(12) for i in range(3)])
    everything = rows(rank(ctx, ListRequest(liked, 20)).rows)
    searched: list[int] = []
    large = searching(ctx, exact_search(ctx.vectors, searched))
    assert rows(rank(large, ListRequest(liked, 20)).rows) == everything
    assert searched == [1]


def test_a_digest_of_new_papers_far_from_the_likes_is_not_cut_short(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """This week's papers may all lie far from what the reader liked, so none is among the
    candidates found near the likes: the list then scores every paper and is as long as
    scoring every paper makes it, not empty."""
    monkeypatch.setattr(cost, "SCAN_US_PER_PAPER", 1e6)  # take the candidate path
    ctx = two_topics(tight_a=0.6, loose_b=0.9, noise=400)
    liked = np.array([0, 1])
    by_score = rows(rank(ctx, ListRequest(liked, len(ctx.item_ids))).rows)
    new = by_score[-5:]  # the five papers least like the likes
    ctx.dates = np.zeros(len(ctx.item_ids))
    ctx.dates[new] = 100.0
    searched: list[int] = []
    large = searching(ctx, exact_search(ctx.vectors, searched))
    digest = rows(rank(large, ListRequest(liked, 10, since_day=50.0)).rows)
    assert searched  # the candidates were looked for first
    assert sorted(digest) == sorted(new)
    assert digest == rows(rank(ctx, ListRequest(liked, 10, since_day=50.0)).rows)


def test_the_walk_from_the_likes_finds_what_a_lost_search_misses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Three loose topics of 80 papers, one like in each: the user's direction lies between
    them, where an approximate index's search may find nothing. Walking the stored neighbour
    graph from the likes still finds nearly all of the list that scoring every paper gives,
    and far more than the likes' own neighbours do."""
    monkeypatch.setattr(cost, "SCAN_US_PER_PAPER", 1e6)  # take the candidate path
    ctx = topics(5, count=3, size=80, spread=1.0, noise=300)
    liked = np.array([0, 80, 160])
    everything = set(rows(rank(ctx, ListRequest(liked, 20)).rows))

    def lost(queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return np.full((len(queries), k), -1), np.zeros((len(queries), k))

    large = searching(ctx, lost)
    walked = set(rows(rank(large, ListRequest(liked, 20)).rows))
    monkeypatch.setattr(candidates, "WALK_ROUNDS", 0)
    unwalked = set(rows(rank(large, ListRequest(liked, 20)).rows))
    assert len(walked & everything) >= 18
    assert len(unwalked & everything) <= 12


def test_each_list_takes_the_cheaper_path() -> None:
    """Scoring every paper costs the same for any reader; the candidate path grows with the
    likes and the length of the list. The cheaper is taken, whatever the corpus size."""
    ctx = two_topics(tight_a=0.6, loose_b=0.9, noise=400)
    searched: list[int] = []
    approximate = searching(ctx, exact_search(ctx.vectors, searched))

    def sized(papers: int) -> RankingContext:
        ctx = copy.copy(approximate)
        ctx.item_ids = [f"p{i}" for i in range(papers)]  # only the count is priced
        return ctx

    for papers in (17_000, 100_000, 1_000_000):
        exact, candidates = cost.path_costs(sized(papers), 1, 20, False)
        assert candidates < exact  # one like: a search beats scoring thousands of papers
    exact, candidates = cost.path_costs(sized(17_000), 100, 20, False)
    assert candidates < exact  # 100 likes: one search, two neighbours a like, then the walk
    exact, candidates = cost.path_costs(sized(1_000_000), 100, 20, False)
    assert candidates < exact
    exact, candidates = cost.path_costs(sized(30_000), 100, 300, False)
    assert exact < candidates  # a long list needs large pools: the scan is cheaper
    assert cost.path_costs(ctx, 1, 20, False)[1] == float("inf")  # no index to search

    # The small corpus here is cheaper to scan: no search at all, and the same list.
    liked = np.array([0, 1, 20])
    assert (rows(rank(approximate, ListRequest(liked, 10)).rows)
            == rows(rank(ctx, ListRequest(liked, 10)).rows))
    assert searched == []


def test_the_most_liked_papers_are_kept_in_order() -> None:
    counts = np.zeros(2_000)
    counts[[5, 900, 1_500]] = [3, 10, 1]
    ctx = build_context(np.eye(2_000, DIM, dtype=np.float32) + 0.01, counts, None,
                        [f"p{i}" for i in range(2_000)])
    assert list(ctx.popular_rows[:3]) == [900, 5, 1_500]
    assert len(ctx.popular_rows) == POPULAR_POOL

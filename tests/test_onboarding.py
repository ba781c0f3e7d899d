"""The onboarding questions (recommender/ranking/onboarding.py, topics.py) on planted topics,
and their simulation in the offline evaluation (``paperrec evaluate --onboarding``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recommender.core.config import Settings
from recommender.embedding.cache import EmbeddingCache
from recommender.embedding.encoders import TextEncoder
from recommender.evaluation.dataset import load_dataset
from recommender.evaluation.runner import render_table, run_evaluation
from recommender.ranking.calibration import DEFAULT
from recommender.ranking.context import RankingContext
from recommender.ranking.onboarding import questions
from recommender.ranking.request import ListRequest
from recommender.ranking.topics import find_topics

PLANTED = 6
PER_TOPIC = 5  # a topic for every five papers: the planted ones
DIM = 48


def planted_context(seed: int = 0) -> tuple[RankingContext, np.ndarray]:
    """Papers around ``PLANTED`` orthogonal directions (``PER_TOPIC`` each, in order), unit
    length, with exact neighbours; and each paper's planted topic. The last paper of each
    topic is the most liked."""
    rng = np.random.default_rng(seed)
    planted = np.repeat(np.arange(PLANTED), PER_TOPIC)
    vectors = np.eye(DIM, dtype=np.float32)[planted] * 3 + rng.normal(
        0, 0.3, (len(planted), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    neighbours = np.argsort(-sims, axis=1)[:, :10]
    counts = np.zeros(len(planted), np.float32)
    counts[PER_TOPIC - 1::PER_TOPIC] = 5
    ctx = RankingContext(vectors, neighbours, np.take_along_axis(sims, neighbours, axis=1),
                         counts, [f"p{i}" for i in range(len(planted))])
    return ctx, planted


def ask(ctx: RankingContext, liked: list[int], disliked: list[int], k: int) -> list[int]:
    topics = find_topics(ctx.vectors, ctx.popularity, ctx.popular_rows)
    request = ListRequest(np.asarray(liked, np.int64), k, disliked=np.asarray(disliked, np.int64))
    return [q.row for q in questions(ctx, topics, DEFAULT, request, k)]


def test_a_new_readers_first_questions_cover_distinct_topics() -> None:
    ctx, planted = planted_context()
    first = ask(ctx, [], [], PLANTED)
    assert len(first) == PLANTED
    assert sorted(planted[first].tolist()) == list(range(PLANTED))  # one from each topic
    # each stands for its topic: the most liked paper of it, near its centre
    assert all(row % PER_TOPIC == PER_TOPIC - 1 for row in first)


def test_answered_papers_are_not_asked_again_and_a_like_is_followed() -> None:
    ctx, planted = planted_context()
    first = ask(ctx, [], [], PLANTED)
    liked, disliked = first[:1], first[1:3]
    after = ask(ctx, liked, disliked, 6)
    assert not set(after) & set(first[:3])
    assert len(after) == len(set(after)) == 6
    # four of six are the unsure ones, next to the like; the other two explore
    assert [planted[row] for row in after[:4]] == [planted[liked[0]]] * 4
    # the others explore topics not answered about yet: not those answered "not for me"
    assert {planted[row] for row in after[4:]} <= set(planted[first[3:]].tolist())


def test_every_representative_can_be_asked_and_then_nothing_is() -> None:
    ctx, _ = planted_context()
    answered: list[int] = []
    while batch := ask(ctx, [], answered, 20):
        assert not set(batch) & set(answered)
        answered += batch
        assert len(answered) <= len(ctx.item_ids)
    assert len(answered) == len(set(answered)) > PLANTED


def test_the_topics_are_found_with_the_same_seed_the_same_way() -> None:
    ctx, _ = planted_context()
    one = find_topics(ctx.vectors, ctx.popularity, ctx.popular_rows, seed=3)
    two = find_topics(ctx.vectors, ctx.popularity, ctx.popular_rows, seed=3)
    assert np.array_equal(one.order, two.order) and np.allclose(one.centres, two.centres)


def write_dataset(folder: Path) -> tuple[Path, Path, Path]:
    """Three topics of ten papers (words of their own), twelve readers of one topic each:
    five papers of it in training, three in test."""
    words = {0: "graph neural message passing node", 1: "federated client privacy server",
             2: "protein folding molecule structure"}
    papers, train, test = [], [], []
    for topic, text in words.items():
        for i in range(10):
            papers.append({"id": f"t{topic}-{i}", "title": f"{text} study {i}",
                           "abstract": f"{text} {text} variant {i}"})
    for user in range(12):
        topic, shift = user % 3, user // 3
        own = [f"t{topic}-{(shift + i) % 10}" for i in range(8)]
        train += [f"u{user}\t{pid}" for pid in own[:5]]
        test += [f"u{user}\t{pid}" for pid in own[5:]]
    (folder / "papers.jsonl").write_text("\n".join(json.dumps(p) for p in papers) + "\n")
    (folder / "train.tsv").write_text("\n".join(train) + "\n")
    (folder / "test.tsv").write_text("\n".join(test) + "\n")
    return folder / "papers.jsonl", folder / "train.tsv", folder / "test.tsv"


def test_the_evaluation_reports_the_first_list_after_n_answers(
    tmp_path: Path, settings: Settings, hashing_embedder: TextEncoder
) -> None:
    data = load_dataset(*write_dataset(tmp_path))
    report = run_evaluation(data, ["popular"], 0, settings, hashing_embedder,
                            EmbeddingCache(tmp_path / "cache.sqlite"), progress=False,
                            onboarding=[3, 6])
    onboarding = report["onboarding"]
    assert onboarding["users"] == 12
    for n in ("3", "6"):
        assert set(onboarding[n]) == {"adaptive", "random", "popular"}
        for figures in onboarding[n].values():
            assert set(figures) == {"ndcg@20", "recall@20", "readers_with_a_like"}
            assert all(0.0 <= value <= 1.0 for value in figures.values())
    # three topics: three questions reach every reader's own topic, so their list is theirs
    # (but for a test paper asked and answered "not for me": it is not in their training)
    assert onboarding["3"]["adaptive"]["recall@20"] > 0.9, onboarding
    assert onboarding["6"]["adaptive"]["ndcg@20"] >= onboarding["6"]["random"]["ndcg@20"]
    table = render_table(report)
    assert "6 answers, adaptive" in table and "(12 simulated new readers)" in table


def test_the_number_of_answers_is_bounded(
    tmp_path: Path, settings: Settings, hashing_embedder: TextEncoder
) -> None:
    from recommender.core.errors import InvalidInput

    data = load_dataset(*write_dataset(tmp_path))
    with pytest.raises(InvalidInput, match="from 1 to 50"):
        run_evaluation(data, ["popular"], 0, settings, hashing_embedder,
                       EmbeddingCache(tmp_path / "cache.sqlite"), progress=False,
                       onboarding=[0, 51])

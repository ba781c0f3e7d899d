"""A first list after a few answers: simulated new readers answering onboarding questions.

Each simulated reader is a user of the dataset with test papers who arrives with nothing. They
answer ``n`` questions, one at a time: a paper shown is a "like" if it is in their own training
library, otherwise "not for me" (a dislike, as the welcome page records it). Then their list
is ranked from those answers by the reading list's ranking (``rank`` over the service's
context, ``Hybrid``), the training papers left out as in the main protocol, and scored on
their test papers (nDCG@20, Recall@20). Three ways to choose the questions, each asked the
same number of them:

- ``adaptive``: the product's (``ranking.onboarding.questions``, one question a round, over
  the topics ``ranking.topics.find_topics`` finds in the same context);
- ``random``: papers drawn at random (the seed and the user's number);
- ``popular``: the most liked papers of the training likes, the same for everyone.

Readers are a sample of ``ONBOARDING_USERS`` (drawn by the seed) to keep the run short.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from recommender.core.errors import InvalidInput
from recommender.evaluation.methods import Hybrid, TopRows
from recommender.evaluation.metrics import METRICS, top_rows, user_metrics
from recommender.ranking.calibration import Calibration
from recommender.ranking.context import RankingContext
from recommender.ranking.onboarding import questions
from recommender.ranking.rank import rank
from recommender.ranking.request import ListRequest
from recommender.ranking.topics import Topics, find_topics

if TYPE_CHECKING:
    from recommender.evaluation.dataset import Dataset

ONBOARDING_USERS = 1_000  # simulated readers (all of them when fewer have test papers)
STRATEGIES = ("adaptive", "random", "popular")
LIST_DEPTH = 20
MAX_ANSWERS = 50
# Of the main protocol's metrics: where each is in ``user_metrics``.
REPORTED = {name: METRICS.index(name) for name in ("ndcg@20", "recall@20")}

def evaluate_onboarding(data: Dataset, vectors: np.ndarray, counts: Sequence[int], seed: int,
                        exact_max: int, calibration: Calibration,
                        progress: bool = True) -> dict[str, Any]:
    """``{"<n>": {strategy: {"ndcg@20", "recall@20", "readers_with_a_like"}}, "users": ...}``
    for each number of answers ``n`` in ``counts``; ``readers_with_a_like``: the share of the
    readers who met at least one paper of their own library among the ``n``."""
    counts = sorted(set(counts))
    if not counts or not all(1 <= n <= MAX_ANSWERS for n in counts):
        raise InvalidInput(f"each number of onboarding answers must be from 1 to {MAX_ANSWERS}")
    hybrid = Hybrid(seed, exact_max)
    hybrid.fit(data, vectors)
    ctx = hybrid.context
    topics = find_topics(ctx.vectors, ctx.popularity, ctx.popular_rows, seed)
    evaluated = np.flatnonzero([len(held) > 0 for held in data.test])
    rng = np.random.default_rng(seed)
    if len(evaluated) > ONBOARDING_USERS:
        evaluated = np.sort(rng.choice(evaluated, ONBOARDING_USERS, replace=False))
    popular = np.argsort(-data.like_counts, kind="stable")[:max(counts)]
    totals = {n: {s: np.zeros(len(REPORTED) + 1) for s in STRATEGIES} for n in counts}
    for user in tqdm(evaluated.tolist(), desc="onboarding", unit="user", disable=not progress):
        train = np.asarray(data.train[user], np.int64)
        drawn = np.random.default_rng([seed, user]).permutation(len(ctx.item_ids))[:max(counts)]
        shown = {"adaptive": _adaptive(ctx, topics, calibration, train, max(counts)),
                 "random": drawn, "popular": popular}
        for strategy, asked in shown.items():
            for n in counts:
                totals[n][strategy] += np.append(
                    _scored(ctx, asked[:n], train, data.test[user]),
                    float(np.isin(asked[:n], train).any()))
    users = len(evaluated)
    report: dict[str, Any] = {
        str(n): {s: {name: round(float(total[i]) / users, 4)
                     for i, name in enumerate([*REPORTED, "readers_with_a_like"])}
                 for s, total in by.items()}
        for n, by in totals.items()}
    return {**report, "users": users, "topics": len(topics),
            "protocol": "liked iff in the user's training library, else disliked; "
                        "training papers never ranked"}


def _adaptive(ctx: RankingContext, topics: Topics, calibration: Calibration,
              train: np.ndarray, n: int) -> np.ndarray:
    """The product's questions, asked one at a time, each answered before the next."""
    asked: list[int] = []
    for _ in range(n):
        liked, disliked = _answers(np.asarray(asked, np.int64), train)
        found = questions(ctx, topics, calibration, ListRequest(liked, 1, disliked=disliked), 1)
        if not found:
            break
        asked.append(found[0].row)
    return np.asarray(asked, np.int64)


def _answers(asked: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mine = np.isin(asked, train)
    return asked[mine], asked[~mine]


def _scored(ctx: RankingContext, asked: np.ndarray, train: np.ndarray,
            held_out: np.ndarray) -> np.ndarray:
    """nDCG@20 and Recall@20 of the list ranked from these answers."""
    liked, disliked = _answers(asked, train)
    ranked = rank(ctx, ListRequest(liked, LIST_DEPTH + len(train), disliked=disliked))
    found = top_rows(TopRows(ranked.rows), train, LIST_DEPTH)  # never a training paper
    metrics = user_metrics(found, held_out)
    return np.asarray([metrics[i] for i in REPORTED.values()])


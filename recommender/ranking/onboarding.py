"""A new reader's first questions: which papers to ask about so that few answers teach the
ranking the most.

Each question is a paper the reader answers "like" or "not for me" (a dislike). Two kinds:

- ``explore``: one representative of each topic the reader has not answered about yet, in the
  topics' spread order (``topics``): the first answers cover the collection's subjects, so a
  reader of any one of them meets it early;
- ``unsure``: once the reader likes something, the papers the model is least sure about: the
  unanswered papers of the reader's list (``rank``, the reading list's own ranking) whose
  probability (``calibration``) is nearest one half. With a few likes every probability is
  well below one half, so these are the best of the list: the answers that move the ranking
  most, and a "like" there confirms a topic the reader has.

A batch of ``k`` questions has ``k - k // EXPLORE_SHARE`` unsure ones (when there are likes)
and the rest explore, so a reader who likes one topic still sees the others. Answered papers
(liked or disliked) are never asked again. Pure functions over arrays; ``Recommender.
questions`` serves them and ``evaluation.onboarding`` measures them on simulated readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from recommender.ranking.calibration import Calibration
from recommender.ranking.context import RankingContext
from recommender.ranking.rank import rank
from recommender.ranking.request import ListRequest
from recommender.ranking.topics import Topics

EXPLORE_SHARE = 3  # one question in three explores once the reader likes something
UNSURE_POOL = 50  # the top of the reader's list the unsure questions are chosen from
MAX_QUESTIONS = 20  # a batch, at most
Kind = Literal["explore", "unsure"]


@dataclass(frozen=True)
class Question:
    row: int
    kind: Kind
    topic: int  # its topic's place in the spread order (0: the first topic)


def questions(ctx: RankingContext, topics: Topics, calibration: Calibration,
              request: ListRequest, k: int) -> list[Question]:
    """The next ``k`` questions (at most ``MAX_QUESTIONS``) for a reader whose answers so far
    are ``request.liked`` and ``request.disliked`` (rows; muted rows are never asked)."""
    k = max(0, min(k, MAX_QUESTIONS))
    answered = np.concatenate([request.liked, request.disliked,
                               np.asarray(request.plan.blocked, np.int64)])
    unsure: list[Question] = []
    if request.personalized:
        unsure = _unsure(ctx, topics, calibration, request, k - k // EXPLORE_SHARE)
    taken = np.concatenate([answered, np.asarray([q.row for q in unsure], np.int64)])
    explore = _explore(ctx, topics, request, taken, k - len(unsure))
    return unsure + explore


def _unsure(ctx: RankingContext, topics: Topics, calibration: Calibration,
            request: ListRequest, k: int) -> list[Question]:
    """The ``k`` unanswered papers of the top of the reader's list whose probability is
    nearest one half (the list's order breaks ties)."""
    if k <= 0:
        return []
    ranked = rank(ctx, ListRequest(request.liked, UNSURE_POOL, disliked=request.disliked,
                                   plan=request.plan, liked_vectors=request.liked_vectors))
    shown = np.isfinite(ranked.scores)
    rows, z = ranked.rows[shown], ranked.scores[shown] / ranked.scale
    doubt = np.abs(calibration.probability(z, request.likes) - 0.5)
    picked = rows[np.argsort(doubt, kind="stable")[:k]]
    places = _places(topics)
    return [Question(int(row), "unsure", int(places[t]))
            for row, t in zip(picked, topics.of(ctx.vectors[picked]), strict=True)]


def _explore(ctx: RankingContext, topics: Topics, request: ListRequest, taken: np.ndarray,
             k: int) -> list[Question]:
    """One representative of each topic not answered about yet, in spread order; once every
    topic has been answered about, the next representatives, the topics the reader liked
    first."""
    if k <= 0 or not len(topics):
        return []
    answered = np.concatenate([request.liked, request.disliked])
    touched = set(topics.of(ctx.vectors[answered]).tolist())
    liked = set(topics.of(ctx.vectors[request.liked]).tolist())
    order = topics.order.tolist()
    again = [t for t in order if t in liked] + [t for t in order if t not in liked]
    passes = [[t for t in order if t not in touched] + again]  # new topics, then the rest
    places = _places(topics)
    excluded = set(taken.tolist())
    found: list[Question] = []
    while len(found) < k:
        before = len(found)
        for t in passes[-1]:
            row = next((int(r) for r in topics.representatives[t] if int(r) not in excluded),
                       None)
            if row is None:
                continue
            excluded.add(row)
            found.append(Question(row, "explore", int(places[t])))
            if len(found) == k:
                return found
        if len(found) == before:  # every representative asked
            break
        passes.append(again)
    return found


def _places(topics: Topics) -> np.ndarray:
    """Each topic's place in the spread order."""
    places = np.empty(len(topics), np.int64)
    places[topics.order] = np.arange(len(topics))
    return places

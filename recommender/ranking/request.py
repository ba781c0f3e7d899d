"""One reading list's request: whose likes it ranks from, which page of how many papers, and
what it never shows.

A ``ListRequest`` is built once per list (``Recommender`` from the reader's feedback in Redis,
the offline evaluation and ``jobs.calibrate`` from held-out likes) and handed as it is to
``rank``, ``score`` and ``why_not``, so a list, the probabilities of its items and the answer
to "why not this paper?" read the same inputs. Papers are index rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from recommender.feedback.rules import Rule
from recommender.ranking.context import RankingContext
from recommender.ranking.reader_rules import RulePlan, page


def no_rows() -> np.ndarray:
    return np.zeros(0, np.int64)


def no_rules() -> RulePlan:
    return RulePlan(no_rows(), [])


@dataclass(frozen=True)
class Blend:
    """How much of each part of the score a list takes, as multiples of the production
    ranking's weights (``scoring``): 1 everywhere is production; a ranking variant
    (``variants``) changes some."""

    popularity: float = 1.0
    collaborative: float = 1.0
    fisher: float = 1.0  # the Fisher term of the reader's direction


PRODUCTION = Blend()


@dataclass(frozen=True, eq=False)
class ListRequest:
    liked: np.ndarray  # rows of the liked papers
    k: int  # papers on the page: followed papers first (``plan``), then the model's
    disliked: np.ndarray = field(default_factory=no_rows)
    offset: int = 0  # where the page starts in the whole list
    # MMR's trade-off (``diversity.mmr``); None: 0, or COLD_START_DIVERSITY without likes.
    diversity: float | None = None
    # Rows served to the reader before (``Recommender``: before the UTC day began, so a list
    # asked for again the same day is the same list; a digest: before now).
    served: np.ndarray = field(default_factory=no_rows)
    exclude_served: bool = False  # served rows left out (else pushed down: SERVED_PENALTY)
    set_aside: np.ndarray = field(default_factory=no_rows)  # rows the reader set aside: left out
    since_day: float | None = None  # only papers dated on or after (days since 1970-01-01)
    min_probability: float = 0.0  # the model's items below it are left out (``recommend``)
    plan: RulePlan = field(default_factory=no_rules)  # muted rows, followed rows put first
    rules: tuple[Rule, ...] = ()  # the reader's rules the plan was made from (oldest first)
    # Liked papers that have no row in the index yet (imported since the build), as vectors
    # of the content space (``content_space.centre_query`` of their raw embeddings), and
    # their ids. They count as likes in the user's direction and in the number of likes;
    # the collaborative model knows only indexed rows.
    liked_vectors: np.ndarray | None = None
    unindexed_ids: tuple[str, ...] = ()
    # Rows the list never shows though it does not rank from them: the reader's other likes,
    # when a list ranks from some of them (a collection's list, one interest of several).
    hidden: np.ndarray = field(default_factory=no_rows)
    blend: Blend = PRODUCTION

    def __post_init__(self) -> None:
        for name in ("liked", "disliked", "served", "set_aside", "hidden"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64))

    @property
    def likes(self) -> int:
        """All the user's likes counted: rows and vectors."""
        return len(self.liked) + (0 if self.liked_vectors is None else len(self.liked_vectors))

    @property
    def personalized(self) -> bool:
        return self.likes > 0

    def page(self) -> tuple[list[tuple[int, Rule]], int, int]:
        """The followed rows on this page (with their rules), then the offset and length of
        the model's part of it (``reader_rules.page``)."""
        first, model_offset, model_k = page(len(self.plan.followed), self.offset, self.k)
        return self.plan.followed[first], model_offset, model_k

    def left_out(self, ctx: RankingContext, rows: np.ndarray) -> np.ndarray:
        """Which of ``rows`` the list never shows: rated (``hidden`` too), set aside, blocked
        by a rule, served (when served papers are left out), or dated before ``since_day``
        (unknown dates too)."""
        out = np.isin(rows, np.concatenate([self.liked, self.disliked, self.hidden, self.set_aside,
                                            np.asarray(self.plan.blocked, np.int64)]))
        if self.exclude_served:
            out |= np.isin(rows, self.served)
        if self.since_day is not None and ctx.dates is not None:
            out |= ~(ctx.dates[rows] >= self.since_day)
        return out

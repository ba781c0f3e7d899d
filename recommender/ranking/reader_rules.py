"""A reader's rules on top of the model: muted papers never shown, new papers of followed
authors and keywords always first.

``plan_rules`` finds, through the corpus's indexes (``Rule.papers``: an index lookup per
rule, not a scan), the rows a list must never show and the followed papers it must put
first; ``Recommender.recommend`` puts the plan in the list's ``ListRequest``: ``rank`` never
shows the first, and the second come before the model's ranking (``page``). The same list
serves the API and the digests.

A followed paper is put first when it is new: dated on or after the list's ``since``, or,
when the list has no ``since``, within the ``FOLLOW_WINDOW_DAYS`` days before the UTC day of
``now`` (the same all day; papers without a date are never new). It is left out when the
reader rated it, muted it (a mute wins over a follow), set it aside, or, with
``exclude_served``, was already served it. Followed papers come newest first, then the
model's ranking without them, ``k`` in all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.corpus.store import CorpusStore
from recommender.feedback.rules import Rule
from recommender.index.paper_index import PaperIndex

FOLLOW_WINDOW_DAYS = 30  # without `since`, a followed paper is new for this many days
DAY_SECONDS = 86_400.0


@dataclass(frozen=True)
class RulePlan:
    blocked: np.ndarray  # rows the model must not rank: muted, and followed (placed by rule)
    followed: list[tuple[int, Rule]]  # rows put first, newest first, with the rule for each


def plan_rules(corpus: CorpusStore, index: PaperIndex, rules: list[Rule], *, now: float,
               since_day: float | None, never: np.ndarray) -> RulePlan:
    """``never``: rows that may not be put first (rated, set aside, or served when those are
    left out).
    ``rules`` oldest first: a paper matched by two follow rules is marked with the older."""
    muted = {index.row(pid) for rule in rules if rule.action == "mute"
             for pid, _ in rule.papers(corpus) if index.has(pid)}
    new_since = (now // DAY_SECONDS - FOLLOW_WINDOW_DAYS if since_day is None
                 else since_day)
    excluded = muted | {int(r) for r in never}
    found: dict[int, tuple[float, Rule]] = {}
    for rule in rules:
        if rule.action != "follow":
            continue
        for pid, day in rule.papers(corpus, new_since):
            if index.has(pid) and index.row(pid) not in excluded:
                found.setdefault(index.row(pid), (day, rule))
    order = sorted(found, key=lambda row: (-found[row][0], index.ids[row]))
    blocked = np.asarray(sorted(muted | set(found)), dtype=np.int64)
    return RulePlan(blocked, [(row, found[row][1]) for row in order])


def page(followed: int, offset: int, k: int) -> tuple[slice, int, int]:
    """Where a page ``[offset, offset + k)`` of the whole list (``followed`` papers put
    first, then the model's ranking) falls: (its slice of the followed papers, then the
    model's offset and k)."""
    first = slice(min(offset, followed), min(offset + k, followed))
    shown = first.stop - first.start
    return first, max(0, offset - followed), k - shown

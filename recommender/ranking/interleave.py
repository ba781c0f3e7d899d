"""Team-draft interleaving (Radlinski, Kurup and Joachims, CIKM 2008): one list made of two
rankings, each paper credited to the ranking ("team") that put it there, so a reader's likes
and clicks say which ranking they prefer, on the same lists, at the same time.

Each round a fair coin says which team picks first; each team in turn adds its best paper not
on the list yet. A paper both rankings would put at the same place goes to whichever team's
turn it is, so two identical rankings split their credit by the coins alone: the comparison of
a ranking with itself is a fair coin, as an A/A test must be. Pure functions; the coins come
from the caller's ``seed`` (``Recommender``: the experiment, the reader and the day, so the
same list all day).
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from recommender.ranking.rank import Ranked

TEAMS = (0, 1)  # 0: the production ranking (A), 1: the candidate (B)


def team_draft(a: np.ndarray, b: np.ndarray, k: int,
               seed: int | np.random.SeedSequence) -> tuple[list[int], list[int]]:
    """The interleaved list of at most ``k`` rows from rankings ``a`` and ``b`` (best first),
    as (for each place: the team, the index of the row in that team's ranking)."""
    rng = np.random.default_rng(seed)
    taken: set[int] = set()
    teams: list[int] = []
    where: list[int] = []
    ranked = (a.tolist(), b.tolist())
    next_of = [0, 0]
    picks = [0, 0]

    def pick(team: int) -> bool:
        rows = ranked[team]
        while next_of[team] < len(rows) and rows[next_of[team]] in taken:
            next_of[team] += 1
        if next_of[team] >= len(rows):
            return False
        taken.add(rows[next_of[team]])
        teams.append(team)
        where.append(next_of[team])
        picks[team] += 1
        return True

    while len(teams) < k:
        # The team with fewer picks goes first; a tie is the coin's (the original rule).
        first = int(rng.integers(2)) if picks[0] == picks[1] else int(picks[1] < picks[0])
        moved = pick(first)
        if len(teams) < k:
            moved = pick(1 - first) or moved
        if not moved:
            break
    return teams, where


def merge(a: Ranked, b: Ranked, teams: list[int], where: list[int]) -> Ranked:
    """The interleaved list as one ``Ranked``: each place's parts from its team's ranking.
    Scores are put in ``a``'s units (``scale``), so ``scores / scale`` is each paper's own
    standing for the reader, whichever ranking put it there."""
    if not teams:
        return a
    pick_a = np.asarray([w for t, w in zip(teams, where, strict=True) if t == 0], np.int64)
    pick_b = np.asarray([w for t, w in zip(teams, where, strict=True) if t == 1], np.int64)
    order = np.argsort(np.asarray([i for i, t in enumerate(teams) if t == 0]
                                  + [i for i, t in enumerate(teams) if t == 1]), kind="stable")
    parts = {}
    for spec in fields(Ranked):
        if spec.name in ("personalized", "scale"):
            continue
        mine, theirs = getattr(a, spec.name), getattr(b, spec.name)
        if spec.name == "scores":
            theirs = theirs * (a.scale / b.scale)
        joined = np.concatenate([np.asarray(mine)[pick_a], np.asarray(theirs)[pick_b]])
        parts[spec.name] = joined[order]
    return Ranked(**parts, personalized=a.personalized, scale=a.scale)

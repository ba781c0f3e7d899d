"""Online experiments: a candidate ranking variant served beside production, and the verdict.

One experiment runs at a time, kept in Redis (``RedisKeys.experiment``) so every worker serves
it from the next list on; the admin page and ``paperrec experiment`` start and stop it, and
every experiment started is remembered (``RedisKeys.experiments``) for the report. Two
designs:

- ``interleave`` (the default): every reader's lists mix production and the candidate by
  team draft (``ranking.interleave``). Each list whose papers got likes, opens or clicks is
  won by the team credited with more of them; the verdict is a two-sided sign test over the
  lists won (``verdict``). Interleaving needs far fewer readers than an A/B split to see a
  difference (Chapelle et al., TOIS 2012).
- ``ab``: each reader gets one variant for the whole experiment, ``share`` of readers the
  candidate, by a stable hash of the experiment and the reader (``Experiment.arm``); the
  verdict compares the readers' like rates at 10 (a two-sided Welch test).

A verdict is given only once the test is significant at ``ALPHA``; before, the report says
"no significant difference yet" with the figures so far.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass
from typing import Literal, cast

import redis
from scipy import stats

from recommender.core.errors import InvalidInput
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import redis_errors

Mode = Literal["interleave", "ab"]
MODES: tuple[Mode, ...] = ("interleave", "ab")
ALPHA = 0.05
CACHE_SECONDS = 1.0  # a worker reads the running experiment at most this often
# An A/A check (the simulator only): the candidate is production itself, labelled with this
# suffix so the log credits each team apart ("hybrid" against "hybrid#B").
SAME_AS_PRODUCTION = "#B"


def base_variant(name: str) -> str:
    """The ranking variant a side of an experiment ranks with (an A/A check's "hybrid#B":
    "hybrid")."""
    return name.removesuffix(SAME_AS_PRODUCTION)


@dataclass(frozen=True)
class Experiment:
    id: str
    production: str
    candidate: str
    mode: Mode = "interleave"
    share: float = 0.5  # ab: the share of readers served the candidate
    started_at: float = 0.0
    stopped_at: float | None = None

    def arm(self, user: str) -> str:
        """ab: the variant this reader is served for the whole experiment."""
        digest = hashlib.sha256(f"{self.id}\0{user}".encode()).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        return self.candidate if draw < self.share else self.production

    def seed(self, user: str, day: float) -> int:
        """interleave: the coins of this reader's lists of one day (the same list all day)."""
        digest = hashlib.sha256(f"{self.id}\0{user}\0{int(day)}".encode()).digest()
        return int.from_bytes(digest[:8], "big")

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Experiment:
        data = json.loads(text)
        return cls(str(data["id"]), str(data["production"]), str(data["candidate"]),
                   data.get("mode", "interleave"), float(data.get("share", 0.5)),
                   float(data.get("started_at", 0.0)),
                   None if data.get("stopped_at") is None else float(data["stopped_at"]))


class ExperimentStore:
    def __init__(self, client: redis.Redis, keys: RedisKeys) -> None:
        self._redis = client
        self._keys = keys
        self._cached: tuple[float, Experiment | None] = (-math.inf, None)

    def current(self) -> Experiment | None:
        """The experiment running (read from Redis at most every CACHE_SECONDS)."""
        read_at, found = self._cached
        if time.monotonic() - read_at < CACHE_SECONDS:
            return found
        with redis_errors():
            text = cast(str | None, self._redis.get(self._keys.experiment))
        found = None if text is None else Experiment.from_json(text)
        self._cached = (time.monotonic(), found)
        return found

    def start(self, production: str, candidate: str, mode: str, share: float,
              now: float, *, same_allowed: bool = False) -> Experiment:
        """Start comparing ``candidate`` with ``production`` (stopping the one running).
        ``same_allowed``: the candidate may be production itself, an A/A check (the
        simulator's): it is then labelled ``<production>#B`` (``SAME_AS_PRODUCTION``)."""
        if mode not in MODES:
            raise InvalidInput(f"unknown experiment mode {mode!r}; choose from "
                               f"{', '.join(MODES)}")
        if not 0 < share < 1:
            raise InvalidInput(f"the share of readers on the candidate must be between 0 and 1 "
                               f"(exclusive), got {share}")
        if candidate == production and same_allowed:
            candidate = production + SAME_AS_PRODUCTION
        elif candidate == production:
            raise InvalidInput(f"the candidate is production itself ({production!r}): choose "
                               f"another variant (an A/A check is `paperrec simulate "
                               f"--variants {production},{production}`)")
        self.stop(now)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
        experiment = Experiment(f"{stamp}-{candidate}", production, candidate,
                                cast(Mode, mode), share, now)
        with redis_errors():
            pipe = self._redis.pipeline(transaction=False)
            pipe.set(self._keys.experiment, experiment.to_json())
            pipe.rpush(self._keys.experiments, experiment.to_json())
            pipe.execute()
        self._cached = (time.monotonic(), experiment)
        return experiment

    def stop(self, now: float) -> Experiment | None:
        """Stop the experiment running (its figures stay in the report); the one stopped."""
        with redis_errors():
            text = cast(str | None, self._redis.getdel(self._keys.experiment))
        self._cached = (time.monotonic(), None)
        if text is None:
            return None
        stopped = Experiment.from_json(text)
        stopped = Experiment(stopped.id, stopped.production, stopped.candidate, stopped.mode,
                             stopped.share, stopped.started_at, now)
        with redis_errors():
            history = cast(list[str], self._redis.lrange(self._keys.experiments, -50, -1))
            for at, entry in enumerate(history):
                if Experiment.from_json(entry).id == stopped.id:
                    self._redis.lset(self._keys.experiments, at - len(history),
                                     stopped.to_json())
        return stopped

    def history(self) -> list[Experiment]:
        """Every experiment started, newest first."""
        with redis_errors():
            entries = cast(list[str], self._redis.lrange(self._keys.experiments, 0, -1))
        return [Experiment.from_json(entry) for entry in reversed(entries)]


@dataclass(frozen=True)
class Verdict:
    """An experiment's result so far."""

    winner: str | None  # the variant significantly better, None until then
    significant: bool
    p_value: float
    # interleave: lists won by each side and tied; ab: readers on each side
    production_wins: int
    candidate_wins: int
    ties: int
    # the candidate's win rate (interleave: of the lists won by either side; ab: its like
    # rate over production's), with a 95% confidence interval
    candidate_win_rate: float
    low: float
    high: float
    impressions: int

    @property
    def text(self) -> str:
        if self.winner is None:
            return (f"no significant difference yet (p = {self.p_value:.3f}, "
                    f"{self.impressions} impressions)")
        return f"{self.winner} wins (p = {self.p_value:.3g}, {self.impressions} impressions)"


def interleaving_verdict(production: str, candidate: str, production_wins: int,
                         candidate_wins: int, ties: int, impressions: int) -> Verdict:
    """Sign test over the lists one side won: two-sided exact binomial; the candidate's win
    rate with a Wilson 95% interval."""
    decided = production_wins + candidate_wins
    if not decided:
        return Verdict(None, False, 1.0, 0, 0, ties, 0.5, 0.0, 1.0, impressions)
    test = stats.binomtest(candidate_wins, decided, 0.5)
    interval = test.proportion_ci(0.95, method="wilson")
    significant = bool(test.pvalue < ALPHA)
    winner = None
    if significant:
        winner = candidate if candidate_wins > production_wins else production
    return Verdict(winner, significant, float(test.pvalue), production_wins, candidate_wins,
                   ties, candidate_wins / decided, float(interval.low), float(interval.high),
                   impressions)


def ab_verdict(production: str, candidate: str, production_rates: list[float],
               candidate_rates: list[float], impressions: int) -> Verdict:
    """Welch's t-test of the readers' like rates on each side; the candidate's mean rate
    over production's, with a 95% interval of the difference added to production's rate."""
    n_a, n_b = len(production_rates), len(candidate_rates)
    if n_a < 2 or n_b < 2:
        return Verdict(None, False, 1.0, n_a, n_b, 0, 0.5, 0.0, 1.0, impressions)
    test = stats.ttest_ind(candidate_rates, production_rates, equal_var=False)
    p = float(test.pvalue) if math.isfinite(test.pvalue) else 1.0
    interval = test.confidence_interval(0.95)
    mean_a = sum(production_rates) / n_a
    mean_b = sum(candidate_rates) / n_b
    significant = p < ALPHA
    winner = (candidate if mean_b > mean_a else production) if significant else None
    return Verdict(winner, significant, p, n_a, n_b, 0, mean_b,
                   mean_a + float(interval.low) if math.isfinite(interval.low) else 0.0,
                   mean_a + float(interval.high) if math.isfinite(interval.high) else 1.0,
                   impressions)

"""The online report counted over columns (``recommender.online.report``): lists with a variant
per paper, places past the first page, a list logged twice, lists in the daily files (read
without their scores) and in the stream, an interleaved and an A/B experiment; against a real
Redis."""

from __future__ import annotations

import math

import pytest

from recommender import wiring
from recommender.core.config import Settings
from recommender.online.events import EventLog, ServedList
from recommender.online.experiments import Experiment
from recommender.online.report import build_report
from recommender.storage.redis_keys import RedisKeys

DAY = 86400.0
NOW = 1_795_000_000.0
CORPUS = 50
INTERLEAVED = Experiment("il", "hybrid", "hybrid-diverse", "interleave")
AB = Experiment("ab", "hybrid", "popular", "ab")


def test_the_report_counts_each_variant_place_and_experiment_of_files_and_stream(
        settings: Settings, namespace: str) -> None:
    log = EventLog(wiring.build(settings).redis, RedisKeys(namespace),
                   settings.data_dir / "events", 10_000)
    mixed = ServedList("aaaaaaaaaaaaaaaa", "ada", "page", NOW, ("p1", "p2", "p3", "p4"),
                       ("hybrid", "hybrid-diverse", "hybrid", "hybrid-diverse"),
                       (1.0, math.nan, 0.5, 0.2), (0.4, 0.3, 0.2, 0.1), 3,
                       (False, True, False, False), 0, "il")
    log.served(mixed)
    log.served(mixed)  # logged twice: counts once
    # The second page of a list: places 21 and 22, past the places and the cuts.
    log.served(ServedList("bbbbbbbbbbbbbbbb", "bob", "api", NOW + DAY, ("p1", "p5"),
                          ("hybrid", "hybrid"), offset=20, experiment="il"))
    log.served(ServedList("dddddddddddddddd", "eve", "api", NOW + DAY, ("p6", "p7"),
                          ("popular", "popular"), experiment="ab"))
    for kind, paper in (("like", "p2"), ("open", "p4"), ("like", "p1")):
        log.outcome(kind, "ada", mixed.list_id, paper, NOW + 60)  # type: ignore[arg-type]
    log.outcome("like", "eve", "dddddddddddddddd", "p7", NOW + DAY + 60)
    assert log.export().lists == 4
    log.served(ServedList("cccccccccccccccc", "ada", "api", NOW + DAY, ("p1",), ("hybrid",)))
    log.outcome("like", "ada", "cccccccccccccccc", "p1", NOW + DAY + 5)  # in the stream

    found = build_report(log, CORPUS, NOW + 2 * DAY,
                         experiments=[INTERLEAVED, AB]).to_dict()

    assert (found["lists"], found["outcomes"], found["unmatched_outcomes"]) == (4, 5, 0)
    diverse = found["variants"]["hybrid-diverse"]["page"]
    assert diverse == found["variants"]["hybrid-diverse"]["all"]
    assert (diverse["lists"], diverse["impressions"], diverse["likes"], diverse["opens"]) == (
        1, 2, 1, 1)
    assert diverse["like_rate@1"] is None and diverse["like_rate@5"] == 0.5
    assert (diverse["new_served"], diverse["new_liked"]) == (0.5, 1.0)
    api = found["variants"]["hybrid"]["api"]
    assert (api["lists"], api["impressions"], api["likes"]) == (2, 3, 1)
    assert api["like_rate@1"] == api["like_rate@10"] == 1.0  # ada's second list; not bob's
    assert api["coverage"] == 2 / CORPUS
    every = found["variants"]["hybrid"]["all"]
    assert (every["lists"], every["impressions"], every["likes"]) == (3, 5, 2)
    assert every["coverage"] == 3 / CORPUS
    assert found["places"]["hybrid"][:3] == [1.0, None, 0.0]
    assert found["places"]["hybrid-diverse"][:4] == [None, 1.0, None, 0.0]
    assert [(d["day"], d["variant"], d["surface"], d["impressions"]) for d in found["days"]] == [
        ("2026-11-18", "hybrid", "all", 2), ("2026-11-18", "hybrid", "page", 2),
        ("2026-11-18", "hybrid-diverse", "all", 2), ("2026-11-18", "hybrid-diverse", "page", 2),
        ("2026-11-19", "hybrid", "all", 3), ("2026-11-19", "hybrid", "api", 3),
        ("2026-11-19", "popular", "all", 2), ("2026-11-19", "popular", "api", 2)]
    interleaved, ab = (e["verdict"] for e in found["experiments"])
    # ada's list: the candidate's two papers liked or opened, production's one: won by the
    # candidate; bob's (no outcome): a tie.
    assert (interleaved["candidate_wins"], interleaved["production_wins"],
            interleaved["ties"], interleaved["impressions"]) == (1, 0, 1, 6)
    assert ab["impressions"] == 2
    assert found["calibration"]["items"] == 4
    # ada and eve liked a paper a minute after their first list; bob never did.
    assert found["new_readers"]["readers"] == 3 and found["new_readers"]["liked"] == 2
    assert found["new_readers"]["median_hours_to_first_like"] == pytest.approx(
        60 / 3600, abs=0.01)

"""The impression log, team-draft interleaving, ranking variants and the online report, against
a real Redis."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from flask.testing import FlaskClient

from recommender import wiring
from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.online.events import EventLog, ServedList
from recommender.online.experiments import interleaving_verdict
from recommender.online.report import build_report
from recommender.ranking.interleave import team_draft
from recommender.ranking.variants import parse_variants
from recommender.storage.redis_keys import RedisKeys

DAY = 86400.0
NOW = 1_795_000_000.0


def test_team_draft_takes_each_rankings_best_in_turn_and_never_repeats() -> None:
    a = np.asarray([1, 2, 3, 4, 5])
    b = np.asarray([9, 1, 8, 7, 6])
    teams, where = team_draft(a, b, 6, seed=3)
    rows = [(a, b)[t][w] for t, w in zip(teams, where, strict=True)]
    assert len(rows) == len(set(rows)) == 6
    assert abs(teams.count(0) - teams.count(1)) <= 1
    assert rows[:2] in ([1, 9], [9, 1])  # each team's best first, in the coin's order


def test_identical_rankings_split_the_credit_by_the_coin_alone() -> None:
    a = np.arange(10)
    firsts = [team_draft(a, a, 10, seed=s)[0][0] for s in range(400)]
    assert 150 < sum(firsts) < 250  # team B picks first about half the time


def test_the_sign_test_gives_a_verdict_only_when_significant() -> None:
    assert interleaving_verdict("hybrid", "popular", 12, 10, 5, 200).winner is None
    found = interleaving_verdict("hybrid", "popular", 80, 20, 30, 2000)
    assert found.winner == "hybrid" and found.significant and found.p_value < 1e-6
    assert found.low < found.candidate_win_rate < found.high


def test_configured_variants_are_checked() -> None:
    assert parse_variants("spread: diversity=0.5; cf-heavy: collaborative=3")[
        "cf-heavy"].blend.collaborative == 3.0
    for bad in ("hybrid: diversity=0.1", "x diversity=1", "y: speed=3", "z: diversity=2"):
        with pytest.raises(ValueError):
            parse_variants(bad)


def _log(settings: Settings, namespace: str) -> EventLog:
    app = wiring.build(settings)
    return EventLog(app.redis, RedisKeys(namespace), settings.data_dir / "events", 10_000)


def test_events_survive_export_and_a_readers_erasure_removes_theirs(
        settings: Settings, namespace: str) -> None:
    log = _log(settings, namespace)
    for day in range(3):
        log.served(ServedList(f"list{day:012d}", "ada", "page", NOW + day * DAY,
                              ("p1", "p2"), ("hybrid", "hybrid")))
        log.outcome("like", "ada", f"list{day:012d}", "p2", NOW + day * DAY + 60)
    log.served(ServedList("listbob0000000", "bob", "api", NOW, ("p1",), ("hybrid",)))
    first = log.export()
    assert (first.lists, first.outcomes) == (4, 3) and log.stream_length() == 0
    log.served(ServedList("list-after-exp", "ada", "api", NOW + 3 * DAY, ("p3",), ("hybrid",)))
    assert log.export().lists == 1
    assert [s.list_id for s in log.lists()][-1] == "list-after-exp"
    assert len(list(log.outcomes())) == 3
    files = sorted(p.name for p in (settings.data_dir / "events").glob("*.jsonl"))
    assert files[0].startswith("lists-") and len(files) == 7
    log.served(ServedList("list-in-stream", "ada", "api", NOW + 4 * DAY, ("p4",), ("hybrid",)))
    assert log.forget("ada") == 8
    assert {s.user for s in log.lists()} == {"bob"} and not list(log.outcomes())
    assert all("ada" not in p.read_text() for p in (settings.data_dir / "events").glob("*"))


def test_the_report_joins_outcomes_to_the_places_they_came_from(
        settings: Settings, namespace: str) -> None:
    log = _log(settings, namespace)
    log.served(ServedList("aaaaaaaaaaaaaaaa", "ada", "page", NOW, ("p1", "p2", "p3"),
                          ("hybrid",) * 3, (1.0, 0.5, 0.1), (0.3, 0.2, 0.1), 4,
                          (True, False, False)))
    log.outcome("like", "ada", "aaaaaaaaaaaaaaaa", "p1", NOW + 5)
    log.outcome("like", "ada", "aaaaaaaaaaaaaaaa", "p1", NOW + 6)  # twice: counts once
    log.outcome("like", "bob", "aaaaaaaaaaaaaaaa", "p2", NOW + 7)  # not bob's list
    log.outcome("like", "ada", "aaaaaaaaaaaaaaaa", "p9", NOW + 8)  # not on that list
    log.outcome("dislike", "ada", "aaaaaaaaaaaaaaaa", "p3", NOW + 9)
    found = build_report(log, corpus_papers=30, now=NOW + DAY).to_dict()
    page = found["variants"]["hybrid"]["page"]
    assert page["lists"] == 1 and page["impressions"] == 3 and page["likes"] == 1
    assert page["like_rate@1"] == 1.0 and page["like_rate@5"] == pytest.approx(1 / 3, abs=1e-3)
    assert page["dislike_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert page["coverage"] == 0.1 and page["new_liked"] == 1.0
    assert found["places"]["hybrid"][:3] == [1.0, 0.0, 0.0]
    assert found["new_readers"]["median_hours_to_first_like"] == pytest.approx(5 / 3600, abs=0.01)
    json.dumps(found)  # as `paperrec report --json` prints it


def test_a_served_list_is_logged_with_its_id_and_an_interleaved_list_credits_each_team(
        client: FlaskClient, sample_settings: Settings, like) -> None:
    app = wiring.build(sample_settings)
    papers = [pid for pid, _, _ in app.corpus.index_rows()]
    like(client, "ada", papers[0])
    like(client, "ada", papers[1])
    answer = client.get("/v1/users/ada/recommendations?k=10").get_json()
    listed = [s for s in app.events.lists() if s.list_id == answer["list_id"]]
    assert len(listed) == 1 and listed[0].surface == "api"
    assert listed[0].papers == tuple(item["paper_id"] for item in answer["items"])
    assert set(listed[0].variants) == {"hybrid"}
    app.experiments.start("hybrid", "popular", "interleave", 0.5, NOW)
    mixed = app.recommender.recommend("ada", 10, now=NOW, surface="api")
    assert mixed.served is not None and set(mixed.served.variants) == {"hybrid", "popular"}
    again = app.recommender.recommend("ada", 10, now=NOW + 60, surface="api")
    assert again.served is not None and again.list_id != mixed.list_id
    # The same list all day: the same coins, the same teams.
    assert [i.paper_id for i in again.items] == [i.paper_id for i in mixed.items]
    assert again.served.variants == mixed.served.variants


def test_an_unknown_variant_in_the_settings_is_refused(settings: Settings) -> None:
    with pytest.raises(InvalidInput, match="PAPERREC_RANKING_VARIANTS"):
        _ = wiring.build(Settings(data_dir=settings.data_dir,
                                  ranking_variants="hybrid: diversity=1")).variants


def test_events_folder(settings: Settings) -> None:
    assert wiring.build(settings).events.folder == Path(settings.data_dir) / "events"


def test_erasing_a_reader_through_the_api_erases_their_logged_lists_and_outcomes(
        client: FlaskClient, sample_settings: Settings, like) -> None:
    app = wiring.build(sample_settings)
    papers = [pid for pid, _, _ in app.corpus.index_rows()]
    like(client, "ada", papers[0])
    for user in ("ada", "bob"):
        answer = client.get(f"/v1/users/{user}/recommendations?k=5").get_json()
        first = answer["items"][0]["paper_id"]
        assert client.put(f"/v1/users/{user}/feedback/{first}",
                          json={"signal": "like", "list_id": answer["list_id"]}).status_code == 200
    app.events.export()
    client.get("/v1/users/ada/recommendations?k=5")  # one more, still in the stream
    assert {s.user for s in app.events.lists()} == {"ada", "bob"}
    assert client.delete("/v1/users/ada").status_code == 204
    assert {s.user for s in app.events.lists()} == {"bob"}
    assert {o.user for o in app.events.outcomes()} == {"bob"}
    assert build_report(app.events, 38, NOW).to_dict()["variants"]["hybrid"]["api"]["likes"] == 1


def test_a_reader_reloading_in_a_loop_cannot_crowd_the_others_out_of_the_log(
        settings: Settings, namespace: str) -> None:
    """The attack: one signed-in reader asks for their list over and over (each list is an
    event) to push every other reader's events out of the capped stream before export."""
    app = wiring.build(settings)
    log = EventLog(app.redis, RedisKeys(namespace), settings.data_dir / "events", 10_000,
                   per_reader_day=5)
    for n in range(50):
        log.served(ServedList(f"flood{n:011d}", "mallory", "page", NOW + n, ("p1",),
                              ("hybrid",)))
    log.served(ServedList("ada0000000000000", "ada", "page", NOW + 60, ("p1",), ("hybrid",)))
    assert not log.outcome("like", "mallory", "flood00000000000", "p1", NOW + 61)
    assert log.outcome("like", "ada", "ada0000000000000", "p1", NOW + 62)
    logged = [s.user for s in log.lists()]
    assert logged.count("mallory") == 5 and logged.count("ada") == 1
    # The next UTC day the reader has a budget again (a new process: another worker).
    fresh = EventLog(app.redis, RedisKeys(namespace), settings.data_dir / "events", 10_000,
                     per_reader_day=5)
    fresh.served(ServedList("flood-next-day00", "mallory", "page", NOW + DAY, ("p1",),
                            ("hybrid",)))
    assert [s.list_id for s in fresh.lists()][-1] == "flood-next-day00"


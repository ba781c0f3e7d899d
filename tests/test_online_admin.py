"""The operator sees the online figures: `paperrec report`, `export-events` and `experiment`,
the like rate on /metrics, and the /admin/online page with its charts and experiment forms
(issue 28). Lists are served as the API serves them (surface "api") and liked by list id, on
a real Redis."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from recommender.core.config import Settings
from recommender.ranking.recommender import ReadingList
from recommender.wiring import Paperrec
from replay.web_steps import csrf_token, post_form, sign_in
from service.cli import main
from service.state import EXTENSION

OPERATOR = "ops@example.org"
CHART = re.compile(r'<img class="chart" src="([^"]+)"')
CORPUS = 38


def parts_of(app: Flask) -> Paperrec:
    return app.extensions[EXTENSION]


def serve(parts: Paperrec, user: str, now: float, *, like_first: bool) -> ReadingList:
    """A list served by the API's surface; its first paper liked by list id when asked."""
    reading = parts.recommender.recommend(user, 10, now=now, surface="api")
    if like_first:
        assert parts.events.outcome("like", user, reading.list_id, reading.items[0].paper_id,
                                    now + 5)
    return reading


def use_settings(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    monkeypatch.setenv("PAPERREC_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("REDIS_URL", settings.redis_url)
    monkeypatch.setenv("PAPERREC_REDIS_NAMESPACE", settings.redis_namespace)


def report_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["report", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_report_json_gives_each_variant_and_surface_and_survives_the_export(
    app: Flask, sample_settings: Settings, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_settings(monkeypatch, sample_settings)
    parts = parts_of(app)
    now = time.time()
    ada = serve(parts, "ada", now, like_first=True)
    bob = serve(parts, "bob", now + 1, like_first=False)
    served = {item.paper_id for item in ada.items + bob.items}

    before = report_json(capsys)
    for surface in ("api", "all"):
        figures = before["variants"]["hybrid"][surface]
        assert figures["lists"] == 2 and figures["impressions"] == 20
        assert figures["like_rate@1"] == 0.5 and figures["like_rate@10"] == 0.05
        assert figures["coverage"] == round(len(served) / CORPUS, 4)
    assert before["places"]["hybrid"][:2] == [0.5, 0.0]
    assert [d["like_rate@10"] for d in before["days"] if d["surface"] == "all"] == [0.05]

    assert main(["report"]) == 0
    table = capsys.readouterr().out
    assert re.search(r"^hybrid\s+api\s+2\s+20\s+0\.500\s+0\.100\s+0\.050", table, re.M), table
    assert "experiments: none started" in table

    assert main(["export-events"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("export-events: exported 2 lists and 1 outcomes"), said
    folder = sample_settings.data_dir / "events"
    assert parts.events.stream_length() == 0
    assert [p.name.split("-")[0] for p in sorted(folder.glob("*.jsonl"))] == ["lists",
                                                                              "outcomes"]
    assert json.loads((folder / "report-latest.json").read_text())["lists"] == 2
    after = report_json(capsys, "--all")
    for key in ("variants", "days", "places", "calibration", "new_readers", "lists",
                "outcomes", "unmatched_outcomes"):
        assert after[key] == before[key], key


def test_an_experiment_started_and_stopped_from_the_terminal(
    app: Flask, sample_settings: Settings, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_settings(monkeypatch, sample_settings)
    parts = parts_of(app)
    assert main(["experiment", "start", "no-such-ranking"]) == 1
    assert "choose from hybrid-diverse" in capsys.readouterr().err
    assert main(["experiment", "start", "popular"]) == 0
    assert "popular against hybrid (interleave)" in capsys.readouterr().out
    time.sleep(1.1)  # a worker reads the running experiment at most once a second
    mixed = serve(parts, "ada", time.time(), like_first=True)
    assert mixed.served is not None and set(mixed.served.variants) == {"hybrid", "popular"}
    assert main(["experiment"]) == 0
    status = capsys.readouterr().out
    assert status.startswith("running: ") and "popular against hybrid" in status
    assert "no significant difference yet" in status
    assert main(["experiment", "stop"]) == 0
    assert "stopped" in capsys.readouterr().out
    time.sleep(1.1)
    plain = serve(parts, "ada", time.time() + 86400, like_first=False)
    assert plain.served is not None and set(plain.served.variants) == {"hybrid"}
    assert main(["experiment"]) == 0
    assert "running: none" in capsys.readouterr().out


def samples(client: FlaskClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.get_data(as_text=True))
            for s in family.samples}


def like_rate(found: dict[tuple[str, tuple[tuple[str, str], ...]], float],
              at: str) -> float | None:
    return found.get(("paperrec_like_rate", (("at", at), ("surface", "api"),
                                             ("variant", "hybrid"))))


def test_metrics_give_the_like_rate_of_the_latest_figures(
    app: Flask, client: FlaskClient,
) -> None:
    parts = parts_of(app)
    now = time.time()
    serve(parts, "ada", now, like_first=True)
    serve(parts, "bob", now, like_first=False)
    found = samples(client)  # no figures yet: computed and written now
    assert like_rate(found, "1") == 0.5 and like_rate(found, "10") == 0.05
    assert found[("paperrec_lists_served", (("surface", "all"), ("variant", "hybrid")))] == 2
    assert found[("paperrec_online_window_days", ())] == 7
    assert abs(found[("paperrec_online_figures_timestamp_seconds", ())] - time.time()) < 60
    # A scrape reads the figures written; the next export brings the new lists in.
    serve(parts, "cy", now + 2, like_first=True)
    assert like_rate(samples(client), "1") == 0.5
    parts.start_experiment("popular", now + 3)
    parts.export_events(now + 4)
    found = samples(client)
    assert like_rate(found, "1") == round(2 / 3, 4)
    p_values = [labels for name, labels in found if name == "paperrec_experiment_p_value"]
    assert len(p_values) == 1 and ("candidate", "popular") in p_values[0]


def test_figures_older_than_the_setting_are_computed_again_in_the_background(
    make_app: Callable[[Settings], Flask], sample_settings: Settings,
) -> None:
    app = make_app(sample_settings.replace(online_figures_seconds=1))
    client, parts = app.test_client(), parts_of(app)
    serve(parts, "ada", time.time(), like_first=True)
    assert like_rate(samples(client), "1") == 1.0
    serve(parts, "bob", time.time(), like_first=False)
    time.sleep(1.1)
    assert like_rate(samples(client), "1") == 1.0  # answered at once, as they were
    deadline = time.monotonic() + 20
    while like_rate(samples(client), "1") != 0.5:
        assert time.monotonic() < deadline, "the figures were not computed again"
        time.sleep(0.1)


@pytest.fixture
def operated(make_app: Callable[[Settings], Flask], sample_settings: Settings,
             tmp_path: Path) -> tuple[Flask, FlaskClient, FlaskClient]:
    """The app with ops@example.org as its operator; a reader's and the operator's browser."""
    mail = tmp_path / "mail"
    app = make_app(sample_settings.replace(admin_emails=OPERATOR, mail_dir=str(mail)))
    reader, operator = app.test_client(), app.test_client()
    sign_in(reader, "ada@example.org", mail)
    sign_in(operator, OPERATOR, mail)
    return app, reader, operator


def test_the_online_page_is_the_operators_with_figures_and_charts(
    operated: tuple[Flask, FlaskClient, FlaskClient],
) -> None:
    app, reader, operator = operated
    assert reader.get("/admin/online").status_code == 404
    assert reader.get("/admin/online/charts/daily.svg").status_code == 404

    empty = operator.get("/admin/online")  # before any list page is served (and logged)
    assert empty.status_code == 200 and "No lists served in this window yet." in empty.text
    daily = operator.get(CHART.findall(empty.text)[0])
    assert daily.content_type == "image/svg+xml" and b"no lists served in this window yet" \
        in daily.data
    assert "/admin/online" not in reader.get("/list").text
    assert 'href="/admin/online">Operations</a>' in operator.get("/list").text

    parts = parts_of(app)
    now = time.time()
    serve(parts, "ada", now, like_first=True)
    serve(parts, "bob", now, like_first=False)
    # The page shows the figures written; "Recompute now" exports and computes them again.
    assert post_form(operator, "/admin/online", "/admin/online/refresh",
                     next="/admin/online").status_code == 303
    shown = operator.get("/admin/online")
    assert shown.status_code == 200
    row = re.search(r"<tr><td>hybrid</td><td>api</td>(.*?)</tr>", shown.text, re.S)
    assert row is not None
    cells = re.findall(r'<td class="number">([^<]*)</td>', row[1])
    assert cells[:5] == ["2", "20", "0.500", "0.100", "0.050"]
    charts = CHART.findall(shown.text)
    assert len(charts) == 3
    titles = {b"Like rate@10 by day", b"Like rate by place", b"Reliability of the probabilities"}
    for url in charts:
        svg = operator.get(url)
        assert svg.status_code == 200 and svg.content_type == "image/svg+xml"
        assert svg.data.lstrip().startswith(b"<?xml") and b"<svg" in svg.data
        assert b"no lists served" not in svg.data
        titles = {title for title in titles if title not in svg.data}
        assert b"hybrid" in svg.data or b"likes" in svg.data  # a legend
    assert not titles


def test_an_experiment_started_on_the_page_interleaves_the_next_list(
    operated: tuple[Flask, FlaskClient, FlaskClient],
) -> None:
    app, _, operator = operated
    parts = parts_of(app)
    refused = operator.post("/admin/online/experiment",
                            data={"action": "start", "candidate": "popular"})
    assert refused.status_code == 400  # no CSRF token
    started = operator.post("/admin/online/experiment", data={
        "csrf_token": csrf_token(operator, "/admin/online"), "action": "start",
        "candidate": "popular", "mode": "interleave", "share": "0.5", "next": "/admin/online"})
    assert started.status_code == 303
    page = operator.get("/admin/online").text
    assert "Running: <strong>" in page and "popular against hybrid" in page
    reading = serve(parts, "ada", time.time(), like_first=True)
    assert reading.served is not None and set(reading.served.variants) == {"hybrid",
                                                                           "popular"}
    stopped = post_form(operator, "/admin/online", "/admin/online/experiment", action="stop",
                        next="/admin/online")
    assert stopped.status_code == 303
    assert "No experiment is running" in operator.get("/admin/online").text
    after = serve(parts, "ada", time.time() + 86400, like_first=False)
    assert after.served is not None and set(after.served.variants) == {"hybrid"}
    post_form(operator, "/admin/online", "/admin/online/refresh", next="/admin/online")
    verdicts = operator.get("/admin/online").text
    table = verdicts.split("<h2>Verdicts</h2>")[1].split("</table>")[0]
    assert "popular against hybrid" in table and "no significant difference yet" in table
    assert "<td>running</td>" not in table  # stopped, with its time

"""`paperrec simulate --service URL`: simulated readers using a running service over HTTP, so
what they do reaches that service's impression log, report and experiment."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from werkzeug.serving import make_server

from recommender.core.config import Settings
from recommender.online.report import build_report
from recommender.simulation.service_readers import ServiceRun, drive, forget
from service.state import components


@pytest.fixture
def served(make_app: Callable[[Settings], Flask], sample_settings: Settings
           ) -> Iterator[tuple[Flask, str]]:
    """The app over the sample corpus, behind a real HTTP server on a free port."""
    app = make_app(sample_settings)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield app, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


def test_simulated_readers_flow_into_the_services_log_and_its_experiment(
        served: tuple[Flask, str]) -> None:
    app, url = served
    with app.app_context():
        parts = components()
    experiment = parts.experiments.start("hybrid", "popular", "interleave", 0.5, time.time())
    run = ServiceRun(url, users=6, rounds=3, k=5, library=5, seed=1)
    summary = drive(run, progress=False)
    assert summary.readers == 6 and summary.likes > 6  # more than each first like
    report = build_report(parts.events, 38, time.time(), experiments=[experiment]).to_dict()
    api = {variant: surfaces["api"] for variant, surfaces in report["variants"].items()}
    assert set(api) == {"hybrid", "popular"}
    assert sum(figures["likes"] for figures in api.values()) == summary.likes
    assert sum(figures["impressions"] for figures in api.values()) == summary.impressions
    assert report["experiments"][0]["verdict"]["impressions"] == summary.impressions
    assert report["unmatched_outcomes"] == 0

    assert forget(run) == 6
    assert not list(parts.events.lists()) and not list(parts.events.outcomes())


def test_a_service_that_does_not_answer_is_said_plainly() -> None:
    from recommender.core.errors import PaperrecError

    with pytest.raises(PaperrecError, match="did not answer"):
        drive(ServiceRun("http://127.0.0.1:9", users=1, rounds=1), progress=False)


def test_the_command_drives_a_running_service_and_forgets_its_readers(
        served: tuple[Flask, str], capsys: pytest.CaptureFixture[str]) -> None:
    from service.cli import main

    app, url = served
    with app.app_context():
        parts = components()
    assert main(["simulate", "--service", url, "--users", "3", "--rounds", "2",
                 "--quiet"]) == 0
    said = capsys.readouterr().out
    assert "3 readers of" in said and "liked" in said
    assert {s.user for s in parts.events.lists()} == {"sim-0001", "sim-0002", "sim-0003"}
    assert main(["simulate", "--service", url, "--users", "3", "--forget"]) == 0
    assert not list(parts.events.lists())
    assert main(["simulate", "--users", "3"]) == 1
    assert "needs --papers, --train, --test, --json" in capsys.readouterr().err

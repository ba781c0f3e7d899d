"""Prometheus metrics: in-process with the test client, then summed over gunicorn workers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from recommender import wiring
from recommender.core.config import Settings
from replay.server import free_port
from service.state import components

Like = Callable[..., None]
PapersAbout = Callable[[Settings, str], list[str]]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
FEEDBACK_ROUTE = "/v1/users/<user_id>/feedback"
ADMIN_KEY = "admin-key-0123456789ab"
CLIENT_KEY = "client-key-0123456789"


def parse(text: str) -> Samples:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scrape(client: FlaskClient, key: str | None = None) -> Samples:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.data
    assert response.content_type.startswith("text/plain")
    return parse(response.get_data(as_text=True))


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def requests_total(samples: Samples, route: str, status: str, method: str = "GET") -> float:
    return value(samples, "paperrec_http_requests_total", route=route, method=method,
                 status=status)


def test_requests_are_counted_by_route_template_method_and_status(app: Flask) -> None:
    client = app.test_client()
    before = scrape(client)
    for user in ("ada", "ada", "bob"):
        assert client.get(f"/v1/users/{user}/feedback").status_code == 200
    assert client.get("/v1/papers/no-such-paper").status_code == 404
    assert client.get("/no/such/path").status_code == 404
    assert client.post("/v1/users/ada/feedback").status_code == 405
    after = scrape(client)

    def delta(route: str, status: str, method: str = "GET") -> float:
        return requests_total(after, route, status, method) - requests_total(before, route,
                                                                            status, method)

    assert delta(FEEDBACK_ROUTE, "200") == 3
    assert delta("/v1/papers/<path:paper_id>", "404") == 1
    assert delta("unmatched", "404") == 1 and delta("unmatched", "405", "POST") == 1
    assert delta("/metrics", "200") == 1  # the first scrape, counted once it was answered
    # Templates only: no user or paper id ever becomes a label value.
    assert not [labels for _, labels in after if any(
        v in ("ada", "bob", "no-such-paper", "/no/such/path") for _, v in labels)]
    count = "paperrec_http_request_duration_seconds_count"
    timed = value(after, count, route=FEEDBACK_ROUTE, method="GET") - value(
        before, count, route=FEEDBACK_ROUTE, method="GET")
    assert timed == 3
    fastest = "paperrec_http_request_duration_seconds_bucket"
    # Buckets from 2.5 ms up; each of the three requests took less than 10 s.
    assert (fastest, (("le", "0.0025"), ("method", "GET"), ("route", FEEDBACK_ROUTE))) in after
    assert value(after, fastest, route=FEEDBACK_ROUTE, method="GET", le="10.0") - value(
        before, fastest, route=FEEDBACK_ROUTE, method="GET", le="10.0") == 3


def test_feedback_writes_are_counted_by_action(
    app: Flask, sample_settings: Settings, like: Like, paper_ids_about: PapersAbout
) -> None:
    client = app.test_client()
    fed = paper_ids_about(sample_settings, "federated")
    before = scrape(client)
    like(client, "ada", fed[0])
    like(client, "ada", fed[1], "dislike")
    like(client, "ada", fed[1])  # replaces the dislike: a like written
    assert client.delete(f"/v1/users/ada/feedback/{fed[0]}").status_code == 204
    # Refused writes are not writes.
    assert client.put(f"/v1/users/ada/feedback/{fed[2]}",
                      json={"signal": "love"}).status_code == 400
    assert client.delete(f"/v1/users/ada/feedback/{fed[3]}").status_code == 404
    # The one-click links of the digest emails write feedback too; unsubscribing does not.
    with app.app_context():
        links = components().links
        dislike_link = links.sign("bob", "dislike", fed[2], time.time())
        unsubscribe_link = links.sign("bob", "unsubscribe", None, time.time())
    assert client.get(f"/v1/links/{dislike_link}").status_code == 200  # shown, not written
    assert client.post(f"/v1/links/{dislike_link}").status_code == 200
    assert client.post(f"/v1/links/{unsubscribe_link}").status_code == 200
    assert client.post("/v1/links/forged.token").status_code == 403  # nothing written
    after = scrape(client)

    def writes(action: str) -> float:
        name = "paperrec_feedback_writes_total"
        return value(after, name, action=action) - value(before, name, action=action)

    assert (writes("like"), writes("dislike"), writes("remove")) == (2, 2, 1)


def test_redis_errors_are_counted(
    sample_settings: Settings, unreachable_redis_url: str,
    make_app: Callable[[Settings], Flask], paper_ids_about: PapersAbout,
) -> None:
    dead = sample_settings.replace(redis_url=unreachable_redis_url)
    client = make_app(dead).test_client()
    paper_id = paper_ids_about(sample_settings, "federated")[0]
    before = scrape(client)
    write = client.put(f"/v1/users/ada/feedback/{paper_id}", json={"signal": "like"})
    assert write.status_code == 503 and write.json["error"]["code"] == "store_unavailable"
    assert client.get("/v1/users/ada/feedback").status_code == 503
    assert client.get("/v1/papers/no-such-paper").status_code == 404  # Redis not needed
    after = scrape(client)
    assert value(after, "paperrec_redis_errors_total") - value(
        before, "paperrec_redis_errors_total") == 2
    route = "/v1/users/<user_id>/feedback/<path:paper_id>"
    assert requests_total(after, route, "503", "PUT") - requests_total(
        before, route, "503", "PUT") == 1
    # A failed write is not a write.
    assert value(after, "paperrec_feedback_writes_total", action="like") == value(
        before, "paperrec_feedback_writes_total", action="like")


def test_index_and_model_gauges_follow_what_is_served(
        app: Flask, sample_settings: Settings, tmp_path: Path, rebuild: Callable[..., Any],
        ingest: Callable[..., Any], train: Callable[..., Any], hashing_embedder: Any,
        like: Like, paper_ids_about: PapersAbout) -> None:
    client = app.test_client()
    samples = scrape(client)
    with app.app_context():
        index = components().index.get()
    assert index.version == "000001" and len(index) == 38
    assert value(samples, "paperrec_index_version") == 1
    assert value(samples, "paperrec_index_papers") == 38
    assert value(samples, "paperrec_collaborative_model_version") == 0  # none trained

    # A new paper, a new index version, a trained model: the next scrape shows them.
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "new-1", "title": "Graph transformers for molecules",
                               "abstract": "We study attention over molecular graphs."}) + "\n")
    ingest(sample_settings, [new])
    assert rebuild(sample_settings, embedder=hashing_embedder).version == "000002"
    fed = paper_ids_about(sample_settings, "federated")
    for user in ("ada", "bob", "cy"):
        like(client, user, fed[0])
        like(client, user, fed[1])
    assert train(sample_settings).version == "000001"
    samples = scrape(client)
    assert value(samples, "paperrec_index_version") == 2
    assert value(samples, "paperrec_index_papers") == 39
    assert value(samples, "paperrec_collaborative_model_version") == 1


def test_gauges_are_zero_without_an_index(
    settings: Settings, make_app: Callable[[Settings], Flask]
) -> None:
    samples = scrape(make_app(settings).test_client())
    assert value(samples, "paperrec_index_version") == 0
    assert value(samples, "paperrec_index_papers") == 0


def test_metrics_need_an_admin_key_when_keys_are_configured(
    sample_settings: Settings, make_app: Callable[[Settings], Flask]
) -> None:
    keyed = sample_settings.replace(api_keys=f"client:{CLIENT_KEY},admin:{ADMIN_KEY}")
    client = make_app(keyed).test_client()
    before = scrape(client, ADMIN_KEY)
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": f"Bearer {CLIENT_KEY}"}
                      ).status_code == 403
    assert client.get("/v1/users/ada/feedback").status_code == 401
    after = scrape(client, ADMIN_KEY)
    # Refused requests are counted too, under the route they asked for.
    for route, status in (("/metrics", "401"), ("/metrics", "403"), (FEEDBACK_ROUTE, "401")):
        assert requests_total(after, route, status) - requests_total(before, route, status) == 1


# --- gunicorn with two workers ------------------------------------------------------------


def get(base: str, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(base + path, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture(params=["given", "made"])
def served(request: pytest.FixtureRequest, model_sample_settings: Settings,
           tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`paperrec serve --workers 2` on the sample data and the test Redis; its metrics dir.

    given: $PROMETHEUS_MULTIPROC_DIR names the dir. made: unset, the server makes a temporary
    one (under the TMPDIR given here, to be found) and removes it when it stops.
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PAPERREC_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update(PAPERREC_DATA_DIR=str(model_sample_settings.data_dir),
               REDIS_URL=model_sample_settings.redis_url,
               PAPERREC_REDIS_NAMESPACE=model_sample_settings.redis_namespace)
    temp = tmp_path / "tmp"
    temp.mkdir()
    if request.param == "given":
        metrics_dir = tmp_path / "prometheus"
        metrics_dir.mkdir()
        (metrics_dir / "counter_1.db").write_bytes(b"left by an earlier run")  # to be wiped
        env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    else:
        env["TMPDIR"] = str(temp)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port), "--workers", "2"],
        env=env, stderr=(tmp_path / "server.log").open("wb"))  # read it when this fails
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if get(base, "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the service did not become ready within 60 s"
            time.sleep(0.2)
        if request.param == "made":
            [metrics_dir] = temp.glob("paperrec-metrics-*")
        yield base, metrics_dir
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    assert not list(temp.glob("paperrec-metrics-*")), "the server left its metrics dir behind"


def worker_counts(metrics_dir: Path, route: str) -> dict[int, float]:
    """What each worker's own file says it answered on ``route`` (pid -> count)."""
    counts = {}
    for path in metrics_dir.glob("counter_*.db"):
        merged = MultiProcessCollector.merge([str(path)], accumulate=False)
        counts[int(path.stem.split("_")[1])] = sum(
            s.value for m in merged for s in m.samples
            if s.name == "paperrec_http_requests_total" and s.labels.get("route") == route)
    return counts


@pytest.mark.model  # `paperrec serve` loads the model in each worker
def test_counts_from_every_worker_are_summed(served: tuple[str, Path],
                                            model_sample_settings: Settings) -> None:
    base, metrics_dir = served
    # Concurrent requests until both workers have answered some: the kernel picks the worker,
    # and the second may still be starting (loading the model).
    sent = 0
    deadline = time.monotonic() + 90
    with ThreadPoolExecutor(8) as pool:
        while time.monotonic() < deadline:
            statuses = list(pool.map(lambda n: get(base, f"/v1/users/u{n}/feedback")[0],
                                     range(20)))
            assert statuses == [200] * 20
            sent += 20
            answered = worker_counts(metrics_dir, FEEDBACK_ROUTE)
            if len(answered) == 2 and all(answered.values()):
                break
            time.sleep(0.2)
    assert len(answered) == 2 and all(answered.values()), answered  # both workers served
    assert sum(answered.values()) == sent

    def scraped_total() -> float:
        status, body = get(base, "/metrics")
        assert status == 200
        samples = parse(body.decode())
        assert value(samples, "paperrec_index_version") == 1
        assert value(samples, "paperrec_index_papers") == 38
        return requests_total(samples, FEEDBACK_ROUTE, "200")

    # Whichever worker answers the scrape, it reports the sum over both; a file a starting
    # worker has just created (still empty) does not fail it.
    (metrics_dir / "counter_999999.db").touch()
    for _ in range(4):
        assert scraped_total() == sent

    # The online figures are the deployment's, not a worker's: every scrape gives the same.
    status, body = get(base, "/v1/users/reader/recommendations?k=10")
    assert status == 200
    listed = json.loads(body)
    liked = urllib.request.Request(
        f"{base}/v1/users/reader/feedback/{listed['items'][0]['paper_id']}", method="PUT",
        data=json.dumps({"signal": "like", "list_id": listed["list_id"]}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(liked, timeout=30) as response:
        assert response.status == 200
    print(wiring.build(model_sample_settings).export_events(time.time()))  # as `paperrec jobs`
    for _ in range(4):
        status, body = get(base, "/metrics")
        samples = parse(body.decode())
        assert value(samples, "paperrec_like_rate", variant="hybrid", surface="api",
                     at="1") == 1.0
        assert value(samples, "paperrec_lists_served", variant="hybrid", surface="all") == 1

    # A worker that exits (here: stopped, and replaced by gunicorn) still counts in the sum.
    gone = next(iter(answered))
    os.kill(gone, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while (metrics_dir / f"gauge_livemostrecent_{gone}.db").exists():  # the child_exit hook
        assert time.monotonic() < deadline, "the exited worker's gauges were not removed"
        time.sleep(0.1)
    for _ in range(4):
        assert scraped_total() == sent

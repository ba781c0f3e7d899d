"""End to end over HTTP, as a user runs it: the `paperrec` command, gunicorn, embedded Redis."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from replay.server import free_port
from tests.servers import PAPERREC, Server, call

pytestmark = pytest.mark.model


def serve(data_dir: Path) -> Iterator[Server]:
    """`paperrec serve` on ``data_dir`` with its embedded Redis; both stopped afterwards."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PAPERREC_DATA_DIR"] = str(data_dir)
    served = Server(env, free_port())
    yield served
    served.stop()
    # The embedded Redis outlives nothing: stop it if a worker left it running.
    pidfile = data_dir / "redis" / "redis.pid"  # a clean stop removes it
    if pidfile.exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pidfile.read_text()), signal.SIGTERM)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """On a data dir made as a user makes it: `paperrec ingest --sample`, `rebuild-index`."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PAPERREC_DATA_DIR"] = str(tmp_path / "var")
    for command in (["ingest", "--sample"], ["rebuild-index", "--quiet"]):
        subprocess.run([*PAPERREC, *command], env=env, check=True, capture_output=True)
    yield from serve(tmp_path / "var")


@pytest.fixture
def sample_server(model_sample_build: Path, tmp_path: Path) -> Iterator[Server]:
    """On a copy of the sample corpus the session has built once."""
    shutil.copytree(model_sample_build, tmp_path / "var")
    yield from serve(tmp_path / "var")


def test_like_two_federated_papers_then_dislike_then_restart(server: Server) -> None:
    server.start()
    base = server.base
    status, found = call(base, "GET", "/v1/search?q=federated%20learning&k=10")
    assert status == 200
    fed = [i["paper_id"] for i in found["items"] if "Fed" in i["title"] or "federated" in
           call(base, "GET", f"/v1/papers/{i['paper_id']}")[1]["abstract"].lower()]
    assert len(fed) == 4, found
    for paper_id in fed[:2]:
        assert call(base, "PUT", f"/v1/users/ada/feedback/{paper_id}", {"signal": "like"})[0] == 200

    status, body = call(base, "GET", "/v1/users/ada/recommendations?k=5")
    assert status == 200 and body["personalized"] is True
    top = body["items"][0]
    assert top["paper_id"] in fed[2:], body
    assert "that you liked" in top["reason"]

    assert call(base, "PUT", f"/v1/users/ada/feedback/{top['paper_id']}",
                {"signal": "dislike"})[0] == 200
    _, body = call(base, "GET", "/v1/users/ada/recommendations?k=36")
    assert top["paper_id"] not in [i["paper_id"] for i in body["items"]]

    server.stop()
    server.start()
    _, stored = call(base, "GET", "/v1/users/ada/feedback")
    assert {(i["paper_id"], i["signal"]) for i in stored["items"]} == {
        (fed[0], "like"), (fed[1], "like"), (top["paper_id"], "dislike")}


def test_a_user_id_too_long_for_the_url_gets_a_json_error(sample_server: Server) -> None:
    sample_server.start()
    status, body = call(sample_server.base, "GET", "/v1/users/" + "u" * 10_000 + "/feedback")
    assert status == 414
    assert "ids are at most 128 characters" in body["error"]["message"]

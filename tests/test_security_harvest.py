"""Threat: a harvest source (or whoever sits in its place) that exhausts the harvester.

An endless answer must not fill memory, a server trickling a byte at a time must not hold the
harvest (and the scheduled jobs behind it) for ever, and a server asking to be retried much
later must not stretch one harvest past its deadline. Hostile servers on loopback, written
here: each does one thing wrong.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psutil
import pytest

from recommender import wiring
from recommender.core.config import Settings
from recommender.corpus.polite_http import HarvestFailed, PoliteClient
from recommender.embedding.encoders import TextEncoder

Behaviour = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def hostile(behaviour: Behaviour) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            with suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                behaviour(self)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/oai"
    finally:
        server.shutdown()
        server.server_close()


def endless(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/xml")
    handler.end_headers()
    block = b"<record>" + b"x" * 65536 + b"</record>"
    for _ in range(50_000):  # 3 GB if all of it were read
        handler.wfile.write(block)


def trickle(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "1000000")
    handler.end_headers()
    for _ in range(1000):
        handler.wfile.write(b"<")
        handler.wfile.flush()
        time.sleep(0.2)


def come_back_tomorrow(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(503)
    handler.send_header("Retry-After", "86400")
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def test_an_endless_answer_is_refused_past_the_size_cap() -> None:
    before = psutil.Process().memory_info().rss
    with hostile(endless) as url:
        client = PoliteClient(url, delay=0, retries=2, max_bytes=8 * 2**20)
        started = time.monotonic()
        with pytest.raises(HarvestFailed, match="larger than 8 MB"):
            client.get(url, {"verb": "ListRecords"})
    assert time.monotonic() - started < 30
    assert client.requests == 1  # asking again would only bring the same
    assert psutil.Process().memory_info().rss - before < 200 * 2**20


def test_a_trickling_answer_is_given_up_after_its_time() -> None:
    with hostile(trickle) as url:
        client = PoliteClient(url, delay=0, retries=1, backoff=0.01, request_seconds=1)
        started = time.monotonic()
        with pytest.raises(HarvestFailed, match="took more than 1 s"):
            client.get(url, {"verb": "ListRecords"})
    assert time.monotonic() - started < 10 and client.requests == 2


def test_a_harvest_stops_at_its_deadline_whatever_the_server_asks() -> None:
    with hostile(come_back_tomorrow) as url:
        client = PoliteClient(url, delay=0, retries=5, deadline=2)
        started = time.monotonic()
        with pytest.raises(HarvestFailed, match="deadline of 2 s has passed"):
            client.get(url, {"verb": "ListRecords"})
    assert time.monotonic() - started < 10


def test_each_harvest_of_a_long_lived_client_has_a_deadline_of_its_own() -> None:
    with hostile(come_back_tomorrow) as url:
        client = PoliteClient(url, delay=0, retries=1, deadline=2)
        client.begin()
        time.sleep(2.1)  # a first harvest that used its whole time (`paperrec jobs` runs on)
        client.begin()
        started = time.monotonic()
        with pytest.raises(HarvestFailed, match="deadline of 2 s"):
            client.get(url, {"verb": "ListRecords"})
        assert client.requests == 1  # the new harvest asked, and waited until its deadline
        assert time.monotonic() - started > 1


def test_a_hanging_source_holds_up_the_scheduled_jobs_for_one_interval_at_most(
    sample_settings: Settings, hashing_embedder: TextEncoder,
) -> None:
    with hostile(trickle) as url:
        settings = sample_settings.replace(arxiv_oai_url=url, arxiv_categories="cs.LG",
                                           arxiv_delay_seconds=0, jobs_interval_seconds=2)
        app = wiring.build(settings, embedder=hashing_embedder)
        started = time.monotonic()
        outcomes = {step.step: step for step in app.scheduled_round(time.time(), print)}
    assert time.monotonic() - started < 30
    assert outcomes["fetch arxiv"].status == "failed"
    assert "deadline of 2 s" in outcomes["fetch arxiv"].detail
    assert outcomes["rebuild-index"].status == "done"  # what the harvest held up runs
    assert outcomes["train"].status == "done"

"""PoliteClient's retry policy against the local OAI-PMH replay server: what it waits, and when
it gives up. The waits are recorded instead of slept, except where the delay itself is tested."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from recommender.corpus.polite_http import HarvestFailed, PoliteClient
from replay.oai_pmh import OaiReplay, Record

FIRST_PAGE = {"verb": "ListRecords", "metadataPrefix": "arXiv"}


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every pause the client asks for (the politeness delay's zeros left out), not slept."""
    asked: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda seconds: seconds and asked.append(seconds))
    return asked


def replay() -> OaiReplay:
    return OaiReplay([Record("2611.00001", "2026-11-02", "Sparse attention", "Sparse.")])


def test_failures_back_off_doubling_then_the_answer_is_returned(waits: list[float]) -> None:
    with replay() as server:
        server.faults = {1: (500, {}), 2: (502, {}), 3: (500, {})}
        client = PoliteClient(server.url, delay=0, retries=3, backoff=5)
        assert b"Sparse attention" in client.get(server.url, FIRST_PAGE)
    assert waits == [5, 10, 20] and client.requests == 4


@pytest.mark.parametrize(("header", "waited"), [
    ("7", 7), ("86400", 600),  # a day is cut to ten minutes
    ("soon", 5),  # not seconds nor a date: the backoff
])
def test_a_503_waits_as_its_retry_after_says_at_most_ten_minutes(
        waits: list[float], header: str, waited: float) -> None:
    with replay() as server:
        server.faults = {1: (503, {"Retry-After": header})}
        client = PoliteClient(server.url, delay=0, retries=1, backoff=5)
        client.get(server.url, FIRST_PAGE)
    assert waits == [waited]


def test_a_retry_after_date_is_waited_until(waits: list[float]) -> None:
    with replay() as server:
        server.faults = {1: (503, {"Retry-After": formatdate(time.time() + 120, usegmt=True)})}
        PoliteClient(server.url, delay=0, retries=1).get(server.url, FIRST_PAGE)
    assert len(waits) == 1 and 115 <= waits[0] <= 120


def test_a_client_error_is_not_asked_again(waits: list[float]) -> None:
    with replay() as server:
        server.faults = {1: (404, {})}
        client = PoliteClient(server.url, delay=0, retries=3)
        with pytest.raises(HarvestFailed, match=r"after 1 attempts \(HTTP 404 Not Found\)"):
            client.get(server.url, FIRST_PAGE)
    assert len(server.requests) == 1 and waits == []


def test_an_unreachable_server_fails_after_the_retries(waits: list[float]) -> None:
    with replay() as server:
        url = server.url
    client = PoliteClient(url, delay=0, retries=2, backoff=1)
    with pytest.raises(HarvestFailed, match=r"after 3 attempts \(ConnectionError: "):
        client.get(url, FIRST_PAGE)
    assert waits == [1, 2]


def test_requests_are_delay_seconds_apart_retries_too() -> None:
    with replay() as server:
        server.faults = {2: (500, {})}
        client = PoliteClient(server.url, delay=0.3, retries=1, backoff=0)
        started = time.monotonic()
        for _ in range(2):  # the second is answered 500, then asked again
            client.get(server.url, FIRST_PAGE)
        elapsed = time.monotonic() - started
    assert len(server.requests) == 3 and elapsed >= 0.6

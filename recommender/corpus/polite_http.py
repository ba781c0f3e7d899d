"""PoliteClient: GETs to a public metadata endpoint, politely and with retries.

One retry policy for every harvest (arXiv's OAI-PMH, OpenReview's API): consecutive requests
are ``delay`` seconds apart; an answer whose status is in ``retry_after_statuses`` and carries
``Retry-After`` waits that long (an HTTP date or seconds, at most ``MAX_WAIT_SECONDS``);
network errors, 5xx and the statuses in ``always_retried`` back off exponentially
(``backoff``, doubled each attempt) for at most ``retries`` retries; any other 4xx stops at
once (asking again will not help). After the last attempt ``HarvestFailed`` says what was
asked and what came back, and that what was stored is kept.

The attempts are tenacity's (``Retrying``: a stop, a wait, which failures are retried), the
Retry-After header is read by urllib3's ``Retry.parse_retry_after``.

Bounded, whatever the server does: an answer is read as it arrives and refused past
``MAX_RESPONSE_BYTES`` (an endless answer took a harvest to 3 GB in 7.5 s) or past
``REQUEST_SECONDS`` (a server sending a byte every 20 s never tripped the per-read timeout),
and the whole harvest stops at its ``deadline`` (HarvestFailed: what was stored is kept and
the next run continues from there), so the scheduled jobs behind it are not held up.

A ``Backoff`` header (Zotero's: "wait this many seconds before your next request") on any
answer holds the next request back that long (at most ``MAX_WAIT_SECONDS``). ``fetch`` is
``get`` for callers that read the answer's headers or accept other statuses (a 304 to a
conditional request, a 403 for a revoked key), with headers of their own (a key).

Why not urllib3's ``Retry`` mounted on the session (``HTTPAdapter(max_retries=...)``): it
retries inside one ``session.get``, below the politeness delay, and its first retry is
immediate (urllib3 2.8's ``get_backoff_time`` is 0 after one error), so a server that has just
failed would be asked again at once, not ``delay`` (arXiv: 3 s) or ``backoff`` (5 s) later.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import requests
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)
from urllib3.exceptions import InvalidHeader
from urllib3.util import Retry

from recommender.core.errors import PaperrecError

TIMEOUT_SECONDS = 60  # to connect, and between two reads
REQUEST_SECONDS = 300  # to read one whole answer
MAX_RESPONSE_BYTES = 128 * 2**20  # an OAI-PMH page or 1,000 OpenReview notes: a few MB
BACKOFF_SECONDS = 5.0  # first wait after a failed request; doubled each time
MAX_WAIT_SECONDS = 600  # a longer Retry-After, or backoff, is cut to this
DEADLINE_SECONDS = 3 * 3600  # one harvest's whole run, retries and waits included


class HarvestFailed(PaperrecError):
    """The endpoint could not be harvested (after the retries); what was stored is kept."""

    code = "harvest_failed"
    status = 502


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]  # requests' case-insensitive headers
    body: bytes


class _Failed(Exception):
    """One attempt's failure, in words (``HTTP 500 Internal Server Error``)."""


class _Retryable(_Failed):
    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.retry_after = retry_after  # seconds the server asked us to wait, if it did


class PoliteClient:
    """``get`` one URL with query parameters; consecutive requests ``delay`` seconds apart."""

    user_agent = "paperrec-harvester/0.1 (python-requests)"
    retry_after_statuses: tuple[int, ...] = (503,)  # waited out as their Retry-After says
    always_retried: tuple[int, ...] = ()  # 4xx statuses retried even without Retry-After
    # after the reason a fetch failed: what the reader of the message can do
    failed_hint = ("; everything harvested before is stored, so run the same command again "
                   "later to continue from there")

    def __init__(self, base_url: str, delay: float, retries: int,
                 backoff: float = BACKOFF_SECONDS, deadline: float = DEADLINE_SECONDS,
                 max_bytes: int = MAX_RESPONSE_BYTES,
                 request_seconds: float = REQUEST_SECONDS) -> None:
        self.base_url, self.delay, self.retries = base_url, delay, retries
        self.deadline, self.max_bytes, self.request_seconds = deadline, max_bytes, request_seconds
        self._started: float | None = None  # the first request's time: the deadline's start
        self._backoff = wait_exponential(multiplier=backoff, max=MAX_WAIT_SECONDS)
        self._retry_after = Retry(retry_after_max=MAX_WAIT_SECONDS)
        self._session = requests.Session()
        self._session.headers["User-Agent"] = self.user_agent
        self._last_request = -float("inf")
        self._not_before = -float("inf")  # a Backoff header's end
        self.requests = 0

    def close(self) -> None:
        self._session.close()

    def begin(self, deadline: float | None = None) -> None:
        """A new harvest starts: its deadline (default: the client's) counts from now. A
        long-lived process (`paperrec jobs`) harvests again and again with one client."""
        self._started = time.monotonic()
        if deadline is not None:
            self.deadline = deadline

    def get(self, url: str, params: Mapping[str, str]) -> bytes:
        """The body of a 200 answer to GET ``url?params``; HarvestFailed after the retries."""
        return self.fetch(url, params).body

    def fetch(self, url: str, params: Mapping[str, str], headers: Mapping[str, str] | None = None,
              accept: tuple[int, ...] = (200,)) -> Answer:
        """The answer to GET ``url?params`` with these headers once its status is one of
        ``accept`` (its body read only for a 200); HarvestFailed after the retries."""
        before = self.requests
        if self._started is None:
            self._started = time.monotonic()
        retrying = Retrying(stop=stop_after_attempt(self.retries + 1), wait=self._wait,
                            retry=retry_if_exception_type(_Retryable), reraise=True)
        try:
            return retrying(self._attempt, url, params, headers or {}, accept)
        except _Failed as exc:
            raise HarvestFailed(
                f"{url} did not answer {shown(params)} after {self.requests - before} "
                f"attempts ({exc}){self.failed_hint}") from None

    def _attempt(self, url: str, params: Mapping[str, str], headers: Mapping[str, str],
                 accept: tuple[int, ...]) -> Answer:
        wait = self.ready_in()
        if wait > max(0.0, self._left()):  # past the deadline with no wait: said below
            raise _Failed(f"the server asked for a pause past the harvest's deadline of "
                          f"{self.deadline:g} s")
        time.sleep(wait)
        if self._left() <= 0:
            raise _Failed(f"the harvest's deadline of {self.deadline:g} s has passed")
        self._last_request = time.monotonic()
        self.requests += 1
        try:
            with self._session.get(url, params=dict(params), headers=dict(headers),
                                   timeout=TIMEOUT_SECONDS, stream=True) as response:
                status = response.status_code
                self._back_off(response.headers.get("Backoff"))
                if status in accept:
                    body = self._body(response) if status == 200 else b""
                    return Answer(status, response.headers, body)
        except requests.RequestException as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}"[:300]) from None
        problem = f"HTTP {status} {response.reason}"
        if status in self.retry_after_statuses and response.headers.get("Retry-After"):
            raise _Retryable(problem, self._seconds(response.headers["Retry-After"]))
        if status >= 500 or status in self.always_retried:
            raise _Retryable(problem)
        raise _Failed(problem)  # our request is wrong: asking again will not help

    def _body(self, response: requests.Response) -> bytes:
        """The answer as it arrives (``read1``: whatever has come, so a trickle is timed
        too), refused past ``max_bytes`` or ``request_seconds``."""
        started, body = time.monotonic(), bytearray()
        while chunk := response.raw.read1(64 * 1024, decode_content=True):
            body += chunk
            if len(body) > self.max_bytes:
                raise _Failed(f"the answer is larger than {self.max_bytes // 2**20} MB")
            if time.monotonic() - started > min(self.request_seconds, self._left()):
                raise _Retryable(f"the answer took more than {self.request_seconds:g} s "
                                 f"to arrive")
        return bytes(body)

    def ready_in(self) -> float:
        """Seconds before the next request may be sent (the delay, a Backoff header)."""
        return max(0.0, max(self._last_request + self.delay, self._not_before)
                   - time.monotonic())

    def _back_off(self, header: str | None) -> None:
        """Hold the next request back as a ``Backoff: <seconds>`` header asks."""
        if header and header.strip().isdigit():
            seconds = min(float(header.strip()), MAX_WAIT_SECONDS)
            self._not_before = max(self._not_before, time.monotonic() + seconds)

    def _left(self) -> float:
        """Seconds left before the harvest's deadline."""
        started = self._started if self._started is not None else time.monotonic()
        return self.deadline - (time.monotonic() - started)

    def _wait(self, state: RetryCallState) -> float:
        """Retry-After when the server sent one, else the backoff of this attempt; never
        past the deadline (the next attempt then stops the harvest)."""
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, _Retryable) and failure.retry_after is not None:
            wait = failure.retry_after
        else:
            wait = self._backoff(state)
        return max(0.0, min(wait, self._left()))

    def _seconds(self, retry_after: str) -> float | None:
        """A Retry-After header (seconds or an HTTP date) in seconds, at most
        MAX_WAIT_SECONDS; None when it is neither (the backoff is waited then)."""
        try:
            return self._retry_after.parse_retry_after(retry_after.strip())
        except InvalidHeader:
            return None


def shown(params: Mapping[str, str]) -> str:
    return "&".join(f"{key}={value}" for key, value in params.items())

"""PoliteClient: GETs to a public metadata endpoint, politely and with retries.

One retry policy for every harvest (arXiv's OAI-PMH, OpenReview's API): consecutive requests
are ``delay`` seconds apart; an answer whose status is in ``retry_after_statuses`` and carries
``Retry-After`` waits that long (an HTTP date or seconds, at most ``MAX_WAIT_SECONDS``);
network errors, 5xx and the statuses in ``always_retried`` back off exponentially
(``backoff``, doubled each attempt) for at most ``retries`` retries; any other 4xx stops at
once (asking again will not help). After the last attempt ``HarvestFailed`` says what was
asked and what came back, and that what was stored is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime

import requests

from recommender.core.errors import PaperrecError

TIMEOUT_SECONDS = 60
BACKOFF_SECONDS = 5.0  # first wait after a failed request; doubled each time
MAX_WAIT_SECONDS = 600.0  # a longer Retry-After, or backoff, is cut to this


class HarvestFailed(PaperrecError):
    """The endpoint could not be harvested (after the retries); what was stored is kept."""

    code = "harvest_failed"
    status = 502


class PoliteClient:
    """``get`` one URL with query parameters; consecutive requests ``delay`` seconds apart."""

    user_agent = "paperrec-harvester/0.1 (python-requests)"
    retry_after_statuses: tuple[int, ...] = (503,)  # waited out as their Retry-After says
    always_retried: tuple[int, ...] = ()  # 4xx statuses retried even without Retry-After

    def __init__(self, base_url: str, delay: float, retries: int,
                 backoff: float = BACKOFF_SECONDS,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.base_url, self.delay, self.retries, self.backoff = base_url, delay, retries, backoff
        self._sleep = sleep
        self._session = requests.Session()
        self._session.headers["User-Agent"] = self.user_agent
        self._last_request = -float("inf")
        self.requests = 0

    def close(self) -> None:
        self._session.close()

    def get(self, url: str, params: Mapping[str, str]) -> bytes:
        """The body of a 200 answer to GET ``url?params``; HarvestFailed after the retries."""
        problem, wait = "", 0.0
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(min(wait, MAX_WAIT_SECONDS))
            self._sleep(max(0.0, self._last_request + self.delay - time.monotonic()))
            self._last_request = time.monotonic()
            self.requests += 1
            wait = self.backoff * 2 ** attempt
            try:
                response = self._session.get(url, params=dict(params), timeout=TIMEOUT_SECONDS)
            except requests.RequestException as exc:
                problem = f"{type(exc).__name__}: {exc}"[:300]
                continue
            if response.status_code == 200:
                return response.content
            problem = f"HTTP {response.status_code} {response.reason}"
            if (response.status_code in self.retry_after_statuses
                    and response.headers.get("Retry-After")):
                wait = retry_after(response.headers["Retry-After"], wait)
                continue
            if response.status_code < 500 and response.status_code not in self.always_retried:
                break  # our request is wrong: asking again will not help
        raise HarvestFailed(
            f"{url} did not answer {shown(params)} after {attempt + 1} "
            f"attempts ({problem}); everything harvested before is stored, so run the same "
            f"command again later to continue from there")


def retry_after(value: str, default: float) -> float:
    """Seconds of a Retry-After header (a number of seconds or an HTTP date)."""
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return default


def shown(params: Mapping[str, str]) -> str:
    return "&".join(f"{key}={value}" for key, value in params.items())

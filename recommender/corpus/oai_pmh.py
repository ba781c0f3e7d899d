"""OaiPmhClient: ListRecords pages from an OAI-PMH 2.0 endpoint, politely and with retries.

Why plain ``requests`` and not a harvesting library: the harvest must store its position after
every page (the resumption token, in the same transaction as the page's papers), honour
``503`` with ``Retry-After``, back off exponentially on network errors and other 5xx with a
bounded number of attempts, and parse XML with ``defusedxml``. Sickle and oaipmh-scythe hide
the token inside an iterator, parse with lxml (not hardened against entity expansion) and retry
only some of these cases, so we would wrap or bypass most of them. One GET per page and one
XML parse is short enough to own; ``requests`` is already installed with the model's stack.

Protocol details followed (OAI-PMH 2.0, sections 3.5 and 3.6): a page's ``resumptionToken``
(empty or absent on the last page) is the only argument of the next request besides the verb;
the error ``noRecordsMatch`` is an empty harvest, not a failure; ``badResumptionToken`` (an
expired token) is raised as ``ExpiredToken`` so the caller can restart from its date.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from xml.etree.ElementTree import Element

import requests
from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from recommender.core.errors import PaperrecError

OAI = "{http://www.openarchives.org/OAI/2.0/}"
TIMEOUT_SECONDS = 60
BACKOFF_SECONDS = 5.0  # first wait after a failed request; doubled each time
MAX_WAIT_SECONDS = 600.0  # a longer Retry-After, or backoff, is cut to this
USER_AGENT = "paperrec-harvester/0.1 (OAI-PMH 2.0; python-requests)"


class HarvestFailed(PaperrecError):
    """The endpoint could not be harvested (after the retries); what was stored is kept."""

    code = "harvest_failed"
    status = 502


class ExpiredToken(HarvestFailed):
    """The endpoint refused a resumption token (``badResumptionToken``)."""


@dataclass
class OaiRecord:
    identifier: str
    datestamp: str
    deleted: bool
    metadata: Element | None  # the element inside <metadata>, None for a deleted record


@dataclass
class OaiPage:
    records: list[OaiRecord] = field(default_factory=list)
    token: str | None = None  # None on the last page
    complete_size: int | None = None  # completeListSize, when the endpoint says


class OaiPmhClient:
    """``list_records`` GETs one page; consecutive requests are ``delay`` seconds apart."""

    def __init__(self, base_url: str, delay: float, retries: int,
                 backoff: float = BACKOFF_SECONDS,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.base_url, self.delay, self.retries, self.backoff = base_url, delay, retries, backoff
        self._sleep = sleep
        self._session = requests.Session()
        self._session.headers["User-Agent"] = USER_AGENT
        self._last_request = -float("inf")
        self.requests = 0

    def close(self) -> None:
        self._session.close()

    def list_records(self, metadata_prefix: str, set_spec: str | None = None,
                     from_date: str | None = None, token: str | None = None) -> OaiPage:
        """The first page (``metadata_prefix``, ``set_spec``, ``from_date``) or the page
        ``token`` names."""
        params = {"verb": "ListRecords"}
        if token:
            params["resumptionToken"] = token
        else:
            params["metadataPrefix"] = metadata_prefix
            if set_spec:
                params["set"] = set_spec
            if from_date:
                params["from"] = from_date
        return parse_page(self._get(params))

    def _get(self, params: dict[str, str]) -> bytes:
        problem, wait = "", 0.0
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(min(wait, MAX_WAIT_SECONDS))
            self._sleep(max(0.0, self._last_request + self.delay - time.monotonic()))
            self._last_request = time.monotonic()
            self.requests += 1
            wait = self.backoff * 2 ** attempt
            try:
                response = self._session.get(self.base_url, params=params,
                                             timeout=TIMEOUT_SECONDS)
            except requests.RequestException as exc:
                problem = f"{type(exc).__name__}: {exc}"[:300]
                continue
            if response.status_code == 200:
                return response.content
            problem = f"HTTP {response.status_code} {response.reason}"
            if response.status_code == 503 and response.headers.get("Retry-After"):
                wait = _retry_after(response.headers["Retry-After"], wait)
                continue
            if response.status_code < 500:
                break  # our request is wrong: asking again will not help
        raise HarvestFailed(
            f"{self.base_url} did not answer {_shown(params)} after {attempt + 1} "
            f"attempts ({problem}); everything harvested before is stored, so run the same "
            f"command again later to continue from there")


def _retry_after(value: str, default: float) -> float:
    """Seconds of a Retry-After header (a number of seconds or an HTTP date)."""
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return default


def _shown(params: dict[str, str]) -> str:
    return "&".join(f"{key}={value}" for key, value in params.items())


def parse_page(content: bytes) -> OaiPage:
    """The records and resumption token of a ListRecords response; HarvestFailed (or
    ExpiredToken) for an OAI-PMH error, noRecordsMatch aside (an empty page)."""
    try:
        root = ElementTree.fromstring(content)
    except (ElementTree.ParseError, DefusedXmlException) as exc:
        raise HarvestFailed(f"the OAI-PMH endpoint answered something that is not safe, "
                            f"well-formed XML ({exc})") from None
    error = root.find(f"{OAI}error")
    if error is not None:
        code = error.get("code", "")
        if code == "noRecordsMatch":
            return OaiPage()
        message = f"the OAI-PMH endpoint answered {code}: {(error.text or '').strip()}"
        raise (ExpiredToken if code == "badResumptionToken" else HarvestFailed)(message)
    listing = root.find(f"{OAI}ListRecords")
    if listing is None:
        raise HarvestFailed("the OAI-PMH endpoint answered without a ListRecords element")
    page = OaiPage()
    for record in listing.findall(f"{OAI}record"):
        header = record.find(f"{OAI}header")
        if header is None:
            continue
        metadata = record.find(f"{OAI}metadata")
        page.records.append(OaiRecord(
            identifier=(header.findtext(f"{OAI}identifier") or "").strip(),
            datestamp=(header.findtext(f"{OAI}datestamp") or "").strip()[:10],
            deleted=header.get("status") == "deleted",
            metadata=metadata[0] if metadata is not None and len(metadata) else None))
    token = listing.find(f"{OAI}resumptionToken")
    if token is not None:
        page.token = (token.text or "").strip() or None
        size = token.get("completeListSize", "")
        page.complete_size = int(size) if size.isdigit() else None
    return page

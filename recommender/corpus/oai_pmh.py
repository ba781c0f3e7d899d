"""OaiPmhClient: ListRecords pages from an OAI-PMH 2.0 endpoint, politely and with retries.

Why plain ``requests`` and not a harvesting library: the harvest must store its position after
every page (the resumption token, in the same transaction as the page's papers), honour
``503`` with ``Retry-After``, back off exponentially on network errors and other 5xx with a
bounded number of attempts, and parse XML with ``defusedxml``. Sickle and oaipmh-scythe hide
the token inside an iterator, parse with lxml (not hardened against entity expansion) and retry
only some of these cases, so we would wrap or bypass most of them. One GET per page and one
XML parse is short enough to own; ``requests`` is already installed with the model's stack.
The retry policy is ``polite_http.PoliteClient``'s, shared with the OpenReview harvest.

Protocol details followed (OAI-PMH 2.0, sections 3.5 and 3.6): a page's ``resumptionToken``
(empty or absent on the last page) is the only argument of the next request besides the verb;
the error ``noRecordsMatch`` is an empty harvest, not a failure; ``badResumptionToken`` (an
expired token) is raised as ``ExpiredToken`` so the caller can restart from its date.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from recommender.corpus.polite_http import HarvestFailed, PoliteClient

__all__ = ["ExpiredToken", "HarvestFailed", "OaiPage", "OaiPmhClient", "OaiRecord",
           "parse_page"]

OAI = "{http://www.openarchives.org/OAI/2.0/}"
USER_AGENT = "paperrec-harvester/0.1 (OAI-PMH 2.0; python-requests)"


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


class OaiPmhClient(PoliteClient):
    """``list_records`` GETs one page; consecutive requests are ``delay`` seconds apart, and
    failures are retried as ``PoliteClient`` says (a 503's Retry-After, backoff on 5xx)."""

    user_agent = USER_AGENT

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
        return parse_page(self.get(self.base_url, params))


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

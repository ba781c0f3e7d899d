"""What the one-click links of a digest email do: like, dislike or unsubscribe, for exactly
the user, action and paper their signed token names; and the "open" links of a digest's
titles and a feed's entries, which lead to the paper.

Looking at a like, dislike or unsubscribe link (``preview``) changes nothing: mail security
scanners fetch every link of an email before its reader sees it, so only ``follow`` (a
deliberate POST) records. Following a link twice leaves the same state as following it once.
A like or dislike link of a list's paper also logs the outcome under that list
(``recommender.online.events``).

An open link (``open``) is followed by a GET, as any link to read: it logs a "click" on the
paper of its list and answers where to go, the paper's own http(s) URL, else its page on the
service (``public_url``); never an address taken from the request. Scanners that fetch every
link of an email log clicks their reader did not make: clicks are a weaker signal than likes.
An expired open link still leads to its paper, and logs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from recommender.core.errors import InvalidLink, NotFound
from recommender.core.papers import web_url
from recommender.corpus.store import CorpusStore
from recommender.digest.links import LinkClaim, LinkSigner
from recommender.digest.subscriptions import SubscriptionStore
from recommender.feedback.store import FeedbackStore
from recommender.online.events import EventLog


@dataclass(frozen=True)
class LinkTarget:
    """What a verified link names, in the words a page needs."""

    claim: LinkClaim
    paper_title: str | None  # like and dislike: the title of the paper
    email: str | None  # unsubscribe: the address subscribed (None: no subscription, or none
    # any more)


class LinkActions:
    def __init__(self, signer: LinkSigner, subscriptions: SubscriptionStore,
                 feedback: FeedbackStore, corpus: CorpusStore, events: EventLog,
                 public_url: str) -> None:
        self._signer = signer
        self._events = events
        self._public_url = public_url.rstrip("/")
        self._subscriptions = subscriptions
        self._feedback = feedback
        self._corpus = corpus

    def preview(self, token: str, now: float) -> LinkTarget:
        """What following the link would do; records nothing. Raises InvalidLink, ExpiredLink,
        or NotFound when the paper has left the collection."""
        claim = self._signer.verify(token, now)
        if claim.action == "open":
            raise InvalidLink("this link opens a paper: follow it with a GET. Nothing was "
                              "recorded.")
        if claim.action == "unsubscribe":
            found = self._subscriptions.get(claim.user_id)
            return LinkTarget(claim, None, found.email if found else None)
        return LinkTarget(claim, self._title(claim), None)

    def follow(self, token: str, now: float) -> LinkTarget:
        """Carry out what the link says and return what it named (``email``: the address that
        was unsubscribed, None when there was no subscription left to end)."""
        target = self.preview(token, now)
        claim = target.claim
        if claim.action == "unsubscribe":
            self._subscriptions.delete(claim.user_id)
        else:
            assert claim.paper_id is not None  # preview found the paper
            assert claim.action in ("like", "dislike")
            self._feedback.set(claim.user_id, claim.paper_id, claim.action, now)
            if claim.list_id is not None:
                self._events.outcome(claim.action, claim.user_id, claim.list_id,
                                     claim.paper_id, now)
        return target

    def open(self, token: str, now: float) -> str:
        """Follow an open link: log a click on its paper of its list (unless the link has
        expired), and answer the address of the paper. InvalidLink when the token was not
        made here or is no open link; NotFound when the paper has left the collection."""
        claim = self._signer.claim(token)
        if claim.action != "open" or claim.paper_id is None:
            raise InvalidLink("this link opens no paper. Nothing was recorded.")
        paper = self._corpus.get(claim.paper_id)
        if paper is None:
            raise NotFound(f"no paper with id {claim.paper_id!r}; it was removed from the "
                           f"collection.")
        if now <= claim.expires_at and claim.list_id is not None:
            self._events.outcome("click", claim.user_id, claim.list_id, paper.id, now)
        own = web_url(paper.url)
        return own if own is not None else f"{self._public_url}/papers/{quote(paper.id, safe='')}"

    def _title(self, claim: LinkClaim) -> str:
        paper = self._corpus.get(claim.paper_id) if claim.paper_id is not None else None
        if paper is None:
            raise NotFound(f"no paper with id {claim.paper_id!r}; it was removed from the "
                           f"collection. Nothing was recorded.")
        return paper.title

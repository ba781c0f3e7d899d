"""What the one-click links of a digest email do: like, dislike or unsubscribe, for exactly
the user, action and paper their signed token names.

Looking at a link (``preview``) changes nothing: mail security scanners fetch every link of
an email before its reader sees it, so only ``follow`` (a deliberate POST) records. Following
a link twice leaves the same state as following it once.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.core.errors import NotFound
from recommender.corpus.store import CorpusStore
from recommender.digest.links import LinkClaim, LinkSigner
from recommender.digest.subscriptions import SubscriptionStore
from recommender.feedback.store import FeedbackStore


@dataclass(frozen=True)
class LinkTarget:
    """What a verified link names, in the words a page needs."""

    claim: LinkClaim
    paper_title: str | None  # like and dislike: the title of the paper
    email: str | None  # unsubscribe: the address subscribed (None: no subscription, or none
    # any more)


class LinkActions:
    def __init__(self, signer: LinkSigner, subscriptions: SubscriptionStore,
                 feedback: FeedbackStore, corpus: CorpusStore) -> None:
        self._signer = signer
        self._subscriptions = subscriptions
        self._feedback = feedback
        self._corpus = corpus

    def preview(self, token: str, now: float) -> LinkTarget:
        """What following the link would do; records nothing. Raises InvalidLink, ExpiredLink,
        or NotFound when the paper has left the collection."""
        claim = self._signer.verify(token, now)
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
            self._feedback.set(claim.user_id, claim.paper_id, claim.action, now)
        return target

    def _title(self, claim: LinkClaim) -> str:
        paper = self._corpus.get(claim.paper_id) if claim.paper_id is not None else None
        if paper is None:
            raise NotFound(f"no paper with id {claim.paper_id!r}; it was removed from the "
                           f"collection. Nothing was recorded.")
        return paper.title

"""What the one-click links of a digest email do: like, dislike or unsubscribe, for exactly
the user, action and paper their signed token names."""

from __future__ import annotations

from recommender.core.errors import NotFound
from recommender.corpus.store import CorpusStore
from recommender.digest.links import LinkClaim, LinkSigner
from recommender.digest.subscriptions import SubscriptionStore
from recommender.feedback.store import FeedbackStore


class LinkActions:
    def __init__(self, signer: LinkSigner, subscriptions: SubscriptionStore,
                 feedback: FeedbackStore, corpus: CorpusStore) -> None:
        self._signer = signer
        self._subscriptions = subscriptions
        self._feedback = feedback
        self._corpus = corpus

    def follow(self, token: str, now: float) -> tuple[LinkClaim, str]:
        """Carry out what a signed link says; returns it and a sentence for the page."""
        claim = self._signer.verify(token, now)
        if claim.action == "unsubscribe":
            self._subscriptions.delete(claim.user_id)
            return claim, "You are unsubscribed: no more paperrec digests will be sent to you."
        assert claim.paper_id is not None
        paper = self._corpus.get(claim.paper_id)
        if paper is None:
            raise NotFound(f"no paper with id {claim.paper_id!r}; it was removed from the "
                           f"collection. Nothing was recorded.")
        self._feedback.set(claim.user_id, claim.paper_id, claim.action, now)
        title = f"\u201c{paper.title}\u201d"
        if claim.action == "like":
            return claim, f"Recorded: more like {title} in your next reading lists."
        return claim, f"Recorded: not interested in {title}; papers like it will sink."

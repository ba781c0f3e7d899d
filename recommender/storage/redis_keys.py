"""Every Redis key paperrec uses, in one place.

All keys live under a namespace (``PAPERREC_REDIS_NAMESPACE``, default ``paperrec``) so one
Redis server can hold several deployments, and tests can use a namespace of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.core.ids import validate_user_id


@dataclass(frozen=True)
class RedisKeys:
    namespace: str = "paperrec"

    def feedback(self, user_id: str) -> str:
        """Hash: paper id -> "<signal>:<unix time>" (like or dislike), one field per paper."""
        return f"{self.namespace}:user:{validate_user_id(user_id)}:feedback"

    def served(self, user_id: str) -> str:
        """Sorted set: paper id -> unix time it was last served to the user (API or digest)."""
        return f"{self.namespace}:user:{validate_user_id(user_id)}:served"

    def subscription(self, user_id: str) -> str:
        """Hash: email, frequency, max_items, created_at of the user's digest subscription."""
        return f"{self.namespace}:user:{validate_user_id(user_id)}:subscription"

    def digests(self, user_id: str) -> str:
        """Hash: digest period (e.g. 2026-11-30 or 2026-W49) -> "<unix time> <message id>"."""
        return f"{self.namespace}:user:{validate_user_id(user_id)}:digests"

    def rules(self, user_id: str) -> str:
        """Hash: "<kind>:<normalised value>" -> JSON {action, value, created_at}: the reader's
        follow and mute rules, one per author or keyword (recommender.feedback.rules)."""
        return f"{self.namespace}:user:{validate_user_id(user_id)}:rules"

    def feed(self, user_id: str) -> str:
        """Hash: nonce, issued_at of the user's current feed URL (recommender.digest.feed_tokens);
        a new nonce revokes every URL signed with the old one."""
        return f"{self.namespace}:user:{validate_user_id(user_id)}:feed"

    @property
    def subscribers(self) -> str:
        """Set: every user id with a subscription."""
        return f"{self.namespace}:subscribers"

    @property
    def digest_lock(self) -> str:
        """String with expiry: held by the one digest job running."""
        return f"{self.namespace}:digest-lock"

    @property
    def users(self) -> str:
        """Set: every user id that has given feedback."""
        return f"{self.namespace}:users"

    @property
    def like_counts(self) -> str:
        """Sorted set: paper id -> number of users who currently like it."""
        return f"{self.namespace}:like_counts"

    def rate(self, identity: str, window: int) -> str:
        """Counter with expiry: requests of one API key (or sign-in emails of one address or
        client, ``sign-in-address:…``, ``sign-in-client:…``) in one rate-limit window."""
        return f"{self.namespace}:rate:{identity}:{window}"

    def web_session(self, session_hash: str) -> str:
        """String with expiry: JSON of one browser session (service/web/sessions.py), keyed by
        the SHA-256 of the session id in the cookie, never by the id itself."""
        return f"{self.namespace}:web-session:{session_hash}"

    def web_sessions(self, user_id: str) -> str:
        """Set: the session hashes of one signed-in user (ended when the account is erased)."""
        return f"{self.namespace}:user:{validate_user_id(user_id)}:web-sessions"

    def sign_in_used(self, token_hash: str) -> str:
        """String with expiry: a sign-in link that was used (single use), by its SHA-256."""
        return f"{self.namespace}:sign-in-used:{token_hash}"

    def user_keys(self, user_id: str) -> list[str]:
        """Every key that holds data about one user (for export and erasure)."""
        return [self.feedback(user_id), self.served(user_id), self.subscription(user_id),
                self.digests(user_id), self.rules(user_id), self.feed(user_id),
                self.web_sessions(user_id)]

    def pattern(self) -> str:
        """Glob matching every key of this namespace (for erasing a test namespace)."""
        return f"{self.namespace}:*"

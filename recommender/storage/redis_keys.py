"""Every Redis key paperrec uses, in one place.

All keys live under a namespace (``PAPERREC_REDIS_NAMESPACE``, default ``paperrec``) so one
Redis server can hold several deployments, and tests can use a namespace of their own.

The layout is the same on one server, behind Sentinels and on a Redis Cluster. Users are put
into ``BUCKETS`` buckets by a stable hash of their id, and the bucket is the key's hash tag
(``paperrec:{b17}:user:ada:feedback``): every key about one user and the bucket's share of
the global sets and counts (``paperrec:{b17}:like_counts``, ``:users``, ``:subscribers``) hash
to one Cluster slot, so a user's write is one Lua script on one node, atomic. The global like
count of a paper is the sum over the buckets. Keys that are not about one user's data (browser
sessions by their hash, rate-limit counters, used sign-in and confirmation links, the digest
lock) carry no tag and are only ever written one key per command.

``BUCKETS`` is part of the stored layout (``LAYOUT_VERSION``): changing it means moving every
user's keys (recommender/feedback/layout.py). 64 buckets spread users over up to 64 Cluster
slots (about 21 per primary of three); each bucket's like counts hold the papers liked by its
users, so summing them reads at most 64 times the liked papers.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from recommender.core.errors import InvalidInput
from recommender.core.ids import validate_user_id

BUCKETS = 64
LAYOUT_VERSION = "2"  # 1: unbraced keys with global sets (before Redis Cluster support)


def bucket_of(user_id: str) -> int:
    """The user's bucket: CRC-32 of the id, so every process and version agrees."""
    return zlib.crc32(validate_user_id(user_id).encode()) % BUCKETS


@dataclass(frozen=True)
class RedisKeys:
    namespace: str = "paperrec"

    def __post_init__(self) -> None:
        if "{" in self.namespace or "}" in self.namespace:
            raise InvalidInput(f"the Redis namespace {self.namespace!r} must not contain braces "
                               f"(they would become the Cluster hash tag of every key)")

    def _user(self, user_id: str, name: str) -> str:
        return f"{self.namespace}:{{b{bucket_of(user_id)}}}:user:{user_id}:{name}"

    def feedback(self, user_id: str) -> str:
        """Hash: paper id -> "<signal>:<unix time>" (like or dislike), one field per paper."""
        return self._user(user_id, "feedback")

    def served(self, user_id: str) -> str:
        """Sorted set: paper id -> unix time it was first served to the user (list or
        digest)."""
        return self._user(user_id, "served")

    def set_aside(self, user_id: str) -> str:
        """Sorted set: paper id -> unix time the user set it aside ("Not now"): left out of
        their lists until put back."""
        return self._user(user_id, "set-aside")

    def subscription(self, user_id: str) -> str:
        """Hash: email, frequency, max_items, min_probability, created_at, confirmed_at ("" while
        the address waits for its confirmation) of the user's digest subscription."""
        return self._user(user_id, "subscription")

    def digests(self, user_id: str) -> str:
        """Hash: digest period (e.g. 2026-11-30 or 2026-W49) -> "<unix time> <message id>"."""
        return self._user(user_id, "digests")

    def rules(self, user_id: str) -> str:
        """Hash: "<kind>:<normalised value>" -> JSON {action, value, created_at}: the reader's
        follow and mute rules, one per author or keyword (recommender.feedback.rules)."""
        return self._user(user_id, "rules")

    def feed(self, user_id: str) -> str:
        """Hash: nonce, issued_at of the user's current feed URL (recommender.digest.feed_tokens);
        a new nonce revokes every URL signed with the old one."""
        return self._user(user_id, "feed")

    def web_sessions(self, user_id: str) -> str:
        """Set: the session hashes of one signed-in user (ended when the account is erased)."""
        return self._user(user_id, "web-sessions")

    def uploads(self, user_id: str) -> str:
        """Hash with expiry: UTC day (2026-12-02) -> papers the user's uploads added to the
        corpus that day (recommender.feedback.upload_quota). Erasing the user deletes it with
        the papers only they uploaded."""
        return self._user(user_id, "uploads")

    def collections(self, user_id: str) -> str:
        """Hash: collection id -> JSON {name, created_at} of the reader's named collections
        (recommender.feedback.collections)."""
        return self._user(user_id, "collections")

    def collected(self, user_id: str) -> str:
        """Hash: paper id -> the ids of the reader's collections it is in, space-separated
        (only liked papers are in a collection)."""
        return self._user(user_id, "collected")

    def zotero(self, user_id: str) -> str:
        """Hash: the reader's Zotero connection (recommender.feedback.zotero): library type
        and id, the API key encrypted (Fernet), the library version synced, the last sync's
        summary, the collections included, the error that stopped the last sync."""
        return self._user(user_id, "zotero")

    def zotero_items(self, user_id: str) -> str:
        """Hash: Zotero item key -> JSON {p: paper id or null, c: its collections, s: why it
        is skipped} of the reader's synced Zotero library."""
        return self._user(user_id, "zotero-items")

    def zotero_collections(self, user_id: str) -> str:
        """Hash: Zotero collection key -> JSON {name, parent, id: the paperrec collection it
        became or null}."""
        return self._user(user_id, "zotero-collections")

    def zotero_likes(self, user_id: str) -> str:
        """Hash: paper id -> the feedback value ("like:<time>") a Zotero sync wrote: a like
        still holding that value came from Zotero, and goes when its items go."""
        return self._user(user_id, "zotero-likes")

    def zotero_stage(self, user_id: str) -> str:
        """Hash: a sync fetched part-way (its pages so far), continued by the next run."""
        return self._user(user_id, "zotero-stage")

    def events_today(self, user_id: str) -> str:
        """Hash with expiry: UTC day -> events the reader added to the impression log that
        day (recommender/online/events.py: each reader's daily budget); a day or two."""
        return self._user(user_id, "events-today")

    def _bucket(self, bucket: int, name: str) -> str:
        return f"{self.namespace}:{{b{bucket}}}:{name}"

    def subscribers(self, bucket: int) -> str:
        """Set: the user ids of the bucket with a subscription."""
        return self._bucket(bucket, "subscribers")

    def zotero_readers(self, bucket: int) -> str:
        """Set: the user ids of the bucket with a Zotero library connected."""
        return self._bucket(bucket, "zotero-readers")

    def users(self, bucket: int) -> str:
        """Set: the user ids of the bucket that have given feedback."""
        return self._bucket(bucket, "users")

    def like_counts(self, bucket: int) -> str:
        """Sorted set: paper id -> number of the bucket's users who currently like it."""
        return self._bucket(bucket, "like_counts")

    @property
    def layout(self) -> str:
        """String: the ``LAYOUT_VERSION`` the keys of this namespace are in."""
        return f"{self.namespace}:layout"

    @property
    def digest_lock(self) -> str:
        """String with expiry: held by the one digest job running."""
        return f"{self.namespace}:digest-lock"

    @property
    def rate_limits(self) -> str:
        """Prefix of the rate-limit counters (``limits``' keys after it): counters with expiry
        of the requests of one API key (or sign-in emails of one address or client,
        ``sign-in-address:…``, ``sign-in-client:…``) in one window (service/rate_limit.py)."""
        return f"{self.namespace}:rate"

    @property
    def events(self) -> str:
        """Stream, capped: the impression log's events not exported to the daily files yet,
        one field ``e`` of JSON each (recommender/online/events.py)."""
        return f"{self.namespace}:events"

    @property
    def experiment(self) -> str:
        """String: JSON of the ranking experiment running (recommender/online/experiments.py);
        absent: none."""
        return f"{self.namespace}:experiment"

    @property
    def experiments(self) -> str:
        """List: JSON of every experiment started, oldest first (the report names them)."""
        return f"{self.namespace}:experiments"

    def web_session(self, session_hash: str) -> str:
        """String with expiry: JSON of one browser session (service/web/sessions.py), keyed by
        the SHA-256 of the session id in the cookie, never by the id itself."""
        return f"{self.namespace}:web-session:{session_hash}"

    def sign_in_used(self, nonce_hash: str) -> str:
        """String with expiry: a sign-in link that was used (single use), by the SHA-256 of
        its nonce."""
        return f"{self.namespace}:sign-in-used:{nonce_hash}"

    def confirmation_used(self, nonce_hash: str) -> str:
        """String with expiry: a link confirming a digest address that was used (single use),
        by the SHA-256 of its nonce."""
        return f"{self.namespace}:confirmation-used:{nonce_hash}"

    def user_keys(self, user_id: str) -> list[str]:
        """Every key that holds data about one user (for export and erasure)."""
        return [self.feedback(user_id), self.served(user_id), self.subscription(user_id),
                self.digests(user_id), self.rules(user_id), self.feed(user_id),
                self.web_sessions(user_id), self.uploads(user_id), self.set_aside(user_id),
                self.collections(user_id), self.collected(user_id), self.zotero(user_id),
                self.zotero_items(user_id), self.zotero_collections(user_id),
                self.zotero_likes(user_id), self.zotero_stage(user_id),
                self.events_today(user_id)]

    def user_write_keys(self, user_id: str) -> list[str]:
        """The user's keys and their bucket's sets and counts: all in one Cluster slot."""
        bucket = bucket_of(user_id)
        return [*self.user_keys(user_id), self.like_counts(bucket), self.users(bucket),
                self.subscribers(bucket), self.zotero_readers(bucket)]

    def pattern(self) -> str:
        """Glob matching every key of this namespace (for erasing a test namespace)."""
        return f"{self.namespace}:*"

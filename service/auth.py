"""API keys: ``Authorization: Bearer <key>``, each key with a role (client or admin), and
each key's rate limit.

Keys come from ``PAPERREC_API_KEYS`` (comma-separated ``role:key``) or the file named by
``PAPERREC_API_KEYS_FILE`` (one ``role:key`` a line, ``#`` comments). Only their SHA-256
digests are kept in memory, and a presented key is compared with every digest in constant
time. With no keys configured the API is open (and unlimited), and ``paperrec serve`` only
binds loopback.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from flask import Flask, Response, g, request

from recommender.core.config import api_key_entries
from recommender.core.errors import Forbidden, RateLimited, Unauthorized

from .access import access_of
from .rate_limit import RateLimiter


@dataclass(frozen=True)
class ApiKeys:
    digests: tuple[tuple[bytes, str], ...]  # (sha256 of the key, role)

    @classmethod
    def parse(cls, inline: str, file: str) -> ApiKeys:
        """The keys of ``PAPERREC_API_KEYS`` and ``PAPERREC_API_KEYS_FILE``, each checked by
        the settings' rule; InvalidInput naming the variable (and file line) if one breaks it."""
        return cls(tuple((hashlib.sha256(key.encode()).digest(), role)
                         for role, key in api_key_entries(inline, file)))

    def __bool__(self) -> bool:
        return bool(self.digests)

    def identify(self, key: str) -> tuple[str, str] | None:
        """(an id for the key that does not reveal it, its role), or None for a wrong key."""
        presented = hashlib.sha256(key.encode()).digest()
        found = None
        for digest, role in self.digests:  # no early exit: same time for every key
            if hmac.compare_digest(presented, digest):
                found = (digest[:8].hex(), role)
        return found


def require_keys(app: Flask, keys: ApiKeys, limiter: RateLimiter | None) -> None:
    if not keys:
        return

    @app.before_request
    def check_key() -> None:
        needed = access_of(request.endpoint)  # as the endpoint declares it (service.access)
        if needed == "open":
            return
        header = request.headers.get("Authorization", "")
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key:
            raise Unauthorized("send an API key: Authorization: Bearer <key>")
        found = keys.identify(key.strip())
        if found is None:
            raise Unauthorized("this API key is not valid")
        key_id, role = found
        if needed == "admin" and role != "admin":
            raise Forbidden("this needs an admin API key")
        if limiter is not None:
            decision = limiter.hit(key_id)
            g.rate_limit = (limiter.limit.requests, decision.remaining)
            if not decision.allowed:
                raise RateLimited(f"more than {limiter.limit} requests with this API key; "
                                  f"retry in {decision.retry_after} s", decision.retry_after)

    @app.after_request
    def rate_limit_headers(response: Response) -> Response:
        if "rate_limit" in g:
            limit, remaining = g.rate_limit
            response.headers["X-RateLimit-Limit"] = str(limit)
            response.headers["X-RateLimit-Remaining"] = str(remaining)
        return response

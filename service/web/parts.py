"""What the web pages need besides the engine's parts, built once per app by
``service.web.install`` and kept in ``app.extensions``."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app

from ..rate_limit import Limit, RateLimiter
from .accounts import SignInLinks
from .sessions import RedisSessionInterface

EXTENSION = "paperrec.web"
# Sign-in emails: a few per address (a typo, a slow mail server), more per client address
# (several people behind one NAT), per hour; both counted in Redis like the API's limits.
SIGN_IN_PER_ADDRESS = Limit(5, 3600)
SIGN_IN_PER_CLIENT = Limit(20, 3600)


@dataclass(frozen=True)
class WebParts:
    sign_in_links: SignInLinks
    sessions: RedisSessionInterface
    per_address: RateLimiter
    per_client: RateLimiter


def web_parts() -> WebParts:
    return current_app.extensions[EXTENSION]

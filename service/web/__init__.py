"""The web pages: sign in by email, read and rate your list, search, your library, your
digest, your data. Server-rendered templates (service/templates), one stylesheet and one small
script (service/static); every action is a plain form that works without the script.

``install(app, parts, rate_limits)`` adds them to the app: the server-side session, CSRF
protection of every form (the JSON API, which uses API keys, is exempt), the security headers,
the error pages, the limits on sign-in emails.
"""

from __future__ import annotations

import hashlib
import hmac

from flask import Blueprint, Flask, session
from flask_wtf.csrf import CSRFProtect
from limits.storage import Storage

from recommender.core.errors import StoreUnavailable
from recommender.wiring import Paperrec

from ..access import access
from ..rate_limit import RateLimiter
from . import (  # noqa: F401  (each declares its views on the blueprint)
    account_pages,
    admin_pages,
    collection_pages,
    error_pages,
    form_parts,
    library_pages,
    online_pages,
    reading,
    rule_pages,
    sign_in,
    welcome,
    zotero_pages,
)
from .accounts import (
    EXTENSION,
    SIGN_IN_OVERALL,
    SIGN_IN_PER_ADDRESS,
    SIGN_IN_PER_CLIENT,
    SignInLinks,
    WebParts,
)
from .blueprint import web
from .sessions import COOKIE, RedisSessionInterface, WebSession


def install(app: Flask, parts: Paperrec, rate_limits: Storage,
            exempt: list[Blueprint]) -> CSRFProtect:
    """Add the web pages to ``app``; ``rate_limits``: where the sign-in emails are counted;
    ``exempt``: the blueprints CSRF protection leaves alone (the JSON API's)."""
    settings = parts.settings
    secret = parts.secret
    app.secret_key = hmac.new(secret, b"paperrec.web-session", hashlib.sha256).hexdigest()
    secure = settings.public_url.startswith("https://")
    sessions = RedisSessionInterface(parts.redis, parts.keys, secure)
    app.session_interface = sessions
    app.config.update(SESSION_COOKIE_NAME=COOKIE, SESSION_COOKIE_HTTPONLY=True,
                      SESSION_COOKIE_SAMESITE="Lax", SESSION_COOKIE_SECURE=secure,
                      WTF_CSRF_TIME_LIMIT=None)  # as long as the session
    app.extensions[EXTENSION] = WebParts(
        sign_in_links=SignInLinks(secret, parts.redis, parts.keys),
        sessions=sessions,
        per_address=RateLimiter(rate_limits, SIGN_IN_PER_ADDRESS),
        per_client=RateLimiter(rate_limits, SIGN_IN_PER_CLIENT),
        overall=RateLimiter(rate_limits, SIGN_IN_OVERALL),
    )
    csrf = CSRFProtect(app)
    for blueprint in exempt:
        csrf.exempt(blueprint)
    app.register_blueprint(web)
    error_pages.install_not_found_pages(app)
    for endpoint, view in app.view_functions.items():
        if endpoint.startswith("web."):
            access("open")(view)  # the pages check the session, not API keys
    return csrf


@web.before_request
def session_available() -> None:
    if isinstance(session, WebSession) and session.unavailable:
        raise StoreUnavailable("the session store (Redis) cannot be reached")

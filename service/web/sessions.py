"""Server-side browser sessions in Redis, as Flask's ``session``.

The cookie holds only a random session id (HttpOnly, SameSite=Lax, Secure when the public URL
is https); the data (the signed-in user, the CSRF token) is JSON in Redis under the SHA-256 of
that id, so a copy of Redis holds no usable cookie. A visitor gets a session only when a page
needs one (a form's CSRF token). ``regenerate`` gives a new id at sign-in (the id a visitor had
before signing in is worth nothing afterwards); ``end`` deletes the session in Redis and the
cookie. If Redis cannot be reached the session is empty and marked ``unavailable``: the web
pages answer 503, the API does not use sessions.

A session's key and the user's set of session hashes (``RedisKeys.web_sessions``, read when the
account is erased) are in different Cluster slots, so they are written by separate commands in
an order that is safe if it stops half-way: the hash joins the user's set before the session
exists, and the session is deleted before its hash leaves the set. Either way a stop leaves at
most a hash in the set whose session is gone, never a session that erasure could not find.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from typing import Any, cast

import redis
from flask import Flask, Request, Response
from flask.sessions import SessionInterface, SessionMixin
from werkzeug.datastructures import CallbackDict

from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import REDIS_FAILURES

log = logging.getLogger(__name__)
COOKIE = "paperrec_session"
SIGNED_IN_SECONDS = 30 * 86_400  # a signed-in session lasts 30 days from its last change
VISITOR_SECONDS = 2 * 3_600  # a visitor's session (a CSRF token for the sign-in form)


def session_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class WebSession(CallbackDict[str, Any], SessionMixin):
    def __init__(self, data: dict[str, Any] | None = None, session_id: str | None = None,
                 unavailable: bool = False) -> None:
        def changed(_: Any) -> None:
            self.modified = True

        super().__init__(data or {}, changed)
        self.session_id = session_id
        self.unavailable = unavailable
        self.modified = False
        self.ended = False
        self.previous_id: str | None = None  # the id replaced by ``regenerate``

    def regenerate(self) -> None:
        """A new session id, the old one deleted (at sign-in)."""
        if self.session_id is not None and self.previous_id is None:
            self.previous_id = self.session_id
        self.session_id = None
        self.modified = True

    def end(self) -> None:
        """Forget everything: the session in Redis and the cookie (at sign-out)."""
        self.clear()
        self.ended = True
        self.modified = True


class RedisSessionInterface(SessionInterface):
    def __init__(self, client: redis.Redis, keys: RedisKeys, secure: bool) -> None:
        self._redis = client
        self._keys = keys
        self._secure = secure

    def open_session(self, app: Flask, request: Request) -> WebSession:
        session_id = request.cookies.get(COOKIE)
        if not session_id or len(session_id) > 100:
            return WebSession()
        try:
            raw = cast(str | None, self._redis.get(self._keys.web_session(
                session_hash(session_id))))
        except REDIS_FAILURES as exc:
            log.warning("session not read, Redis unavailable: %s", exc)
            return WebSession(unavailable=True)
        if raw is None:
            return WebSession()  # expired or ended: a new one if needed
        return WebSession(json.loads(raw), session_id)

    def save_session(self, app: Flask, session: SessionMixin, response: Response) -> None:
        assert isinstance(session, WebSession)
        if not session.modified or session.unavailable:
            return
        try:
            self._save(session, response)
        except REDIS_FAILURES as exc:
            log.warning("session not saved, Redis unavailable: %s", exc)

    def _save(self, session: WebSession, response: Response) -> None:
        user = session.get("uid")
        if session.previous_id is not None:
            self._forget(session.previous_id, user)
        if session.ended or not session:
            if session.session_id is not None:
                self._forget(session.session_id, user)
            response.delete_cookie(COOKIE, path="/", secure=self._secure, httponly=True,
                                   samesite="Lax")
            return
        if session.session_id is None:
            session.session_id = secrets.token_urlsafe(32)
        seconds = SIGNED_IN_SECONDS if user else VISITOR_SECONDS
        hashed = session_hash(session.session_id)
        if isinstance(user, str):  # first the user's set, then the session (module docstring)
            pipe = self._redis.pipeline(transaction=False)  # one key: one slot
            pipe.sadd(self._keys.web_sessions(user), hashed)
            pipe.expire(self._keys.web_sessions(user), SIGNED_IN_SECONDS)
            pipe.execute()
        self._redis.set(self._keys.web_session(hashed), json.dumps(dict(session)), ex=seconds)
        response.set_cookie(COOKIE, session.session_id, max_age=seconds, path="/",
                            secure=self._secure, httponly=True, samesite="Lax")
        response.vary.add("Cookie")

    def _forget(self, session_id: str, user: object) -> None:
        hashed = session_hash(session_id)
        self._redis.delete(self._keys.web_session(hashed))  # first the session, then the set
        if isinstance(user, str):
            self._redis.srem(self._keys.web_sessions(user), hashed)

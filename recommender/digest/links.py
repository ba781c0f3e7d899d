"""Signed one-click links: each names exactly one user, one action and (for feedback) one paper.

A token is an ``itsdangerous.URLSafeSerializer`` dump: base64url compact JSON with the user,
the action, the paper and the expiry time (``{"u", "a", "p", "e"}``), and for a paper of a
list the list's id (``"l"``, optional: links signed before it still verify; an outcome names
it in the impression log, ``recommender.online.events``), a dot, and an HMAC-SHA256
signature keyed from the deployment's secret. Nothing is stored per link: a token
that verifies is the proof. The expiry is in the payload rather than a signing timestamp
checked against a maximum age (``URLSafeTimedSerializer``), so a link means what it said
when it was mailed: it expires on the date it was given, whatever ``LINK_DAYS`` later
becomes, the page can name that date, and signing and checking both take ``now``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from itsdangerous import BadData, URLSafeSerializer

from recommender.core.errors import ExpiredLink, InvalidInput, InvalidLink
from recommender.online.events import check_list_id

# "open": a paper's title in a digest, an entry's link in a feed: followed, it logs a click and
# goes on to the paper.
Action = Literal["like", "dislike", "unsubscribe", "open"]
ACTIONS: tuple[Action, ...] = ("like", "dislike", "unsubscribe", "open")
LINK_DAYS = 30
SALT = "paperrec.digest-link"  # keys these signatures apart from any other use of the secret

# The token format before itsdangerous: ``<base64url payload>.<base64url HMAC-SHA256 of the
# payload, keyed with the raw secret>``, the same payload as today. That is exactly what an
# itsdangerous Signer makes with no key derivation, so links already mailed are checked by
# this fallback signer. Delete it 30 days (LINK_DAYS) after the release that brought the
# itsdangerous tokens: by then every link signed the old way has expired.
_OLD_FORMAT = {"key_derivation": "none", "digest_method": hashlib.sha256}


@dataclass(frozen=True)
class LinkClaim:
    user_id: str
    action: Action
    paper_id: str | None
    expires_at: float
    list_id: str | None = None  # the list the paper was on (None: not said, or not ours)


class LinkSigner:
    def __init__(self, secret: bytes, days: int = LINK_DAYS) -> None:
        if len(secret) < 16:
            raise InvalidInput("the link secret must be at least 16 bytes")
        self.days = days
        self._serializer = URLSafeSerializer(
            secret, salt=SALT,
            signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha256},
            fallback_signers=[_OLD_FORMAT])

    def sign(self, user_id: str, action: Action, paper_id: str | None, now: float,
             list_id: str | None = None) -> str:
        """A token for ``action`` by ``user_id`` (on ``paper_id`` of the list ``list_id``),
        valid ``days`` from now."""
        payload: dict[str, Any] = {"u": user_id, "a": action, "p": paper_id,
                                   "e": int(now + self.days * 86400)}
        if list_id is not None:
            payload["l"] = list_id
        return self._serializer.dumps(payload)

    def verify(self, token: str, now: float) -> LinkClaim:
        """What a token claims; InvalidLink when it was not made here (or was altered),
        ExpiredLink when its time is over."""
        claim = self.claim(token)
        if now > claim.expires_at:
            day = dt.datetime.fromtimestamp(claim.expires_at, dt.UTC).date().isoformat()
            raise ExpiredLink(f"this link expired on {day}. Nothing was recorded; the buttons "
                              f"in your latest digest work.")
        return claim

    def claim(self, token: str) -> LinkClaim:
        """What a token made here claims, expired or not (an expired "open" link still
        leads to its paper); InvalidLink when it was not made here (or was altered)."""
        try:
            data = self._serializer.loads(token)
        except BadData:
            raise InvalidLink("this link is not valid: it was altered or was not made by this "
                              "service. Nothing was recorded.") from None
        return _claim(data)


def _claim(data: Any) -> LinkClaim:
    """The claim in a signed payload (only this service signs, but a payload that does not
    have the expected shape still must not crash the page)."""
    if not isinstance(data, dict) or data.get("a") not in ACTIONS:
        raise InvalidLink("this link names no known action. Nothing was recorded.")
    user, paper, expires = data.get("u"), data.get("p"), data.get("e")
    needs_paper = data["a"] != "unsubscribe"
    if (not isinstance(user, str) or not isinstance(expires, int | float)
            or not (isinstance(paper, str) if needs_paper else paper is None)):
        raise InvalidLink("this link is not complete. Nothing was recorded.")
    return LinkClaim(user, data["a"], paper, float(expires), check_list_id(data.get("l")))


def load_secret(explicit: str, data_dir: Path) -> bytes:
    """``PAPERREC_SECRET_KEY`` when set; otherwise a random key kept in the data directory, so
    the service and the digest job on one data directory sign and check the same links."""
    if explicit:
        return explicit.encode()
    path = data_dir / "secret.key"
    if not path.exists():
        # Written whole under a name of its own, then linked into place: link() fails when
        # the key exists, so when several workers start at once the first key wins and every
        # process reads that one.
        data_dir.mkdir(parents=True, exist_ok=True)
        staged = path.with_name(f".secret.key.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(32))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(staged, path)
        except FileExistsError:
            pass
        finally:
            staged.unlink()
    return path.read_text().strip().encode()

"""Signed one-click links: each names exactly one user, one action and (for feedback) one paper.

A token is ``<payload>.<signature>``, both base64url: the payload is compact JSON with the user,
the action, the paper and an expiry time; the signature is HMAC-SHA256 over the payload with
the deployment's secret. Nothing is stored per link: a token that verifies is the proof.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from recommender.core.errors import ExpiredLink, InvalidInput, InvalidLink

Action = Literal["like", "dislike", "unsubscribe"]
ACTIONS: tuple[Action, ...] = ("like", "dislike", "unsubscribe")
LINK_DAYS = 30


@dataclass(frozen=True)
class LinkClaim:
    user_id: str
    action: Action
    paper_id: str | None
    expires_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class LinkSigner:
    def __init__(self, secret: bytes, days: int = LINK_DAYS) -> None:
        if len(secret) < 16:
            raise InvalidInput("the link secret must be at least 16 bytes")
        self._secret = secret
        self.days = days

    def sign(self, user_id: str, action: Action, paper_id: str | None, now: float) -> str:
        payload = json.dumps({"u": user_id, "a": action, "p": paper_id,
                              "e": int(now + self.days * 86400)}, separators=(",", ":"))
        body = _b64(payload.encode())
        return f"{body}.{self._signature(body)}"

    def verify(self, token: str, now: float) -> LinkClaim:
        body, _, signature = token.partition(".")
        if not body or not hmac.compare_digest(signature.encode(), self._signature(body).encode()):
            raise InvalidLink("this link is not valid: it was altered or was not made by this "
                              "service. Nothing was recorded.")
        data = json.loads(_unb64(body))
        if data.get("a") not in ACTIONS:
            raise InvalidLink("this link names no known action. Nothing was recorded.")
        claim = LinkClaim(data["u"], data["a"], data.get("p"), float(data["e"]))
        if now > claim.expires_at:
            day = dt.datetime.fromtimestamp(claim.expires_at, dt.UTC).date().isoformat()
            raise ExpiredLink(f"this link expired on {day}. Nothing was recorded; the buttons "
                              f"in your latest digest work.")
        return claim

    def _signature(self, body: str) -> str:
        return _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())


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

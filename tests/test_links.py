"""The signed links of the digest emails: tokens are signed with itsdangerous and the old format
still verifies; the link-signing secret is one per data directory, even when many workers
start at once."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import multiprocessing
import time
from pathlib import Path

import pytest

from recommender.core.errors import ExpiredLink, InvalidLink
from recommender.digest.links import LinkClaim, LinkSigner, load_secret


def _secret(data_dir: str) -> bytes:
    return load_secret("", Path(data_dir))


def test_workers_starting_together_share_one_secret(tmp_path: Path) -> None:
    for attempt in range(5):
        data_dir = tmp_path / f"data-{attempt}"
        with multiprocessing.get_context("fork").Pool(8) as pool:
            secrets = set(pool.map(_secret, [str(data_dir)] * 16))
        assert len(secrets) == 1 and len(next(iter(secrets))) >= 32
        assert [p.name for p in data_dir.iterdir()] == ["secret.key"]  # nothing left behind


def test_an_explicit_secret_wins(tmp_path: Path) -> None:
    assert load_secret("from-the-environment", tmp_path) == b"from-the-environment"
    assert not (tmp_path / "secret.key").exists()


def _old_format_token(secret: bytes, user: str, action: str, paper: str | None,
                      expires: float) -> str:
    """A token as links were signed before itsdangerous: base64url JSON payload, a dot,
    base64url HMAC-SHA256 of the payload keyed with the raw secret."""
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    payload = json.dumps({"u": user, "a": action, "p": paper, "e": int(expires)},
                         separators=(",", ":"))
    body = b64(payload.encode())
    return f"{body}.{b64(hmac.new(secret, body.encode(), hashlib.sha256).digest())}"


def test_tokens_signed_the_old_way_verify_until_they_expire(tmp_path: Path) -> None:
    secret = load_secret("", tmp_path)
    links = LinkSigner(secret)
    now = time.time()
    old = _old_format_token(secret, "ada", "like", "pl-fed", now + 29 * 86400)
    expires = float(int(now) + 29 * 86400)
    assert links.verify(old, now) == LinkClaim("ada", "like", "pl-fed", expires)
    unsubscribe = _old_format_token(secret, "ada", "unsubscribe", None, now + 86400)
    assert links.verify(unsubscribe, now).action == "unsubscribe"
    # Altered: another user's payload under ada's signature; or signed with another secret.
    eve = _old_format_token(secret, "eve", "like", "pl-fed", now + 86400).split(".")[0]
    for bad in (f"{eve}.{old.split('.')[1]}",
                _old_format_token(b"x" * 32, "eve", "like", "pl-fed", now + 86400)):
        with pytest.raises(InvalidLink, match="not valid"):
            links.verify(bad, now)
    with pytest.raises(ExpiredLink):
        links.verify(_old_format_token(secret, "ada", "like", "pl-fed", now - 1), now)
    # New tokens carry the same payload, signed another way (itsdangerous, a salted key).
    new = links.sign("ada", "like", "pl-fed", now)
    same_claim_old_way = _old_format_token(secret, "ada", "like", "pl-fed", now + 30 * 86400)
    assert new.split(".")[0] == same_claim_old_way.split(".")[0]
    assert new != same_claim_old_way and links.verify(new, now).user_id == "ada"


def test_a_token_expires_on_the_day_it_was_given(tmp_path: Path) -> None:
    secret = load_secret("", tmp_path)
    signed_at = dt.datetime(2026, 11, 29, 7, 0, tzinfo=dt.UTC).timestamp()
    token = LinkSigner(secret).sign("ada", "dislike", "pl-fed", signed_at)
    # Shorter links for new mail do not shorten the ones already sent.
    shorter = LinkSigner(secret, days=7)
    assert shorter.verify(token, signed_at + 29 * 86400).action == "dislike"
    with pytest.raises(ExpiredLink, match="expired on 2026-12-29"):
        shorter.verify(token, signed_at + 30 * 86400 + 1)
    with pytest.raises(InvalidLink):
        LinkSigner(b"another-deployments-secret").verify(token, signed_at)

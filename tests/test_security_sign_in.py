"""Threat: account takeover through a sign-in link that was already used.

Anyone who sees a used link (browser history, a forwarded mail, a proxy log) must not sign in
with it, in the form it was used or in any other encoding of the same signed token: the
signature decoder accepts padding ("="), characters outside the alphabet it skips ("!"), and
other values of the spare low bits of the last character, and each gives a new text.
"""

from __future__ import annotations

import base64
import string
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient

from tests.web_steps import ask_for_link, mails, post_form, sign_in_link

ALPHABET = string.ascii_letters + string.digits + "-_"


def same_bytes_variants(token: str) -> list[str]:
    """Other texts of the same token: padded, with skipped characters, and with the last
    character's spare bits changed (each checked to decode to the very same signature)."""
    head, _, signature = token.rpartition(".")
    decoded = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    spare = [f"{head}.{signature[:-1]}{c}" for c in ALPHABET if c != signature[-1]
             and base64.urlsafe_b64decode(signature[:-1] + c + "=" * (-len(signature) % 4))
             == decoded]
    assert spare or len(signature) % 4 == 0, "a signature of this length has spare bits"
    return [token + "=", token + "==", token + "!!", token + "!*!*", *spare]


def test_a_used_link_in_no_encoding_signs_in_again(
    web_app: Flask, mail_dir: Path
) -> None:
    reader = web_app.test_client()
    ask_for_link(reader, "ada@example.org")
    path = "/" + sign_in_link(mails(mail_dir)[-1]).split("://", 1)[1].split("/", 1)[1]
    assert post_form(reader, path, path.split("?")[0]).status_code == 303  # used once
    token = path.split("?")[0].rsplit("/", 1)[1]
    variants = same_bytes_variants(token)
    assert len(variants) >= 5
    for variant in variants:
        attacker: FlaskClient = web_app.test_client()
        page = attacker.get(f"/sign-in/link/{variant}")
        assert page.status_code in (403, 410), (variant, page.status_code)
        if page.status_code == 410:
            assert "already used" in page.text
        refused = post_form(attacker, "/sign-in", f"/sign-in/link/{variant}")
        assert refused.status_code in (403, 410), variant
        assert attacker.get("/list").status_code == 302, "not signed in"

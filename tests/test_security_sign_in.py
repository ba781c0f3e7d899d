"""Threat: account takeover through a sign-in link that was already used.

Anyone who sees a used link (browser history, a forwarded mail, a proxy log) must not sign in
with it, in the form it was used or in any other encoding of the same signed token: the
signature decoder accepts padding ("="), characters outside the alphabet it skips ("!"), and
other values of the spare low bits of the last character, and each gives a new text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from replay.web_steps import ask_for_link, mails, post_form, sign_in_link
from tests.token_variants import same_bytes_variants


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


# Threat: behind a reverse proxy every request comes from the proxy's address, so one client
# that asks for 20 sign-in emails locked every reader's sign-in out for an hour.

def ask_from(browser: FlaskClient, client_address: str, address: str) -> int:
    page = browser.get("/sign-in", headers={"X-Forwarded-For": client_address})
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token, page.text
    return browser.post("/sign-in", data={"csrf_token": html.unescape(token[1]),
                                          "email": address},
                        headers={"X-Forwarded-For": client_address}).status_code


@pytest.mark.parametrize(("proxies", "others_locked_out"), [(1, False), (0, True)])
def test_behind_a_trusted_proxy_one_client_cannot_lock_the_others_out(
    make_app: Callable[[Settings], Flask], sample_settings: Settings, mail_dir: Path,
    proxies: int, others_locked_out: bool
) -> None:
    app = make_app(sample_settings.replace(mail_dir=str(mail_dir), trusted_proxies=proxies))
    flooder, reader = app.test_client(), app.test_client()
    codes = [ask_from(flooder, "203.0.113.5", f"r{n}@example.org") for n in range(21)]
    assert codes == [303] * 20 + [429]
    assert ask_from(reader, "198.51.100.7", "ada@example.org") == (
        429 if others_locked_out else 303)

"""Signing in by email on the web pages: the link mailed, used once, within 15 minutes; the
answer the same for every address; the mails rate-limited; sign-out ends the session."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from aiosmtpd.controller import Controller
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from replay.server import free_port
from replay.web_steps import ask_for_link, csrf_token, mails, post_form, sign_in, sign_in_link
from service.web.accounts import SignInLinks, user_id_for
from service.web.sessions import COOKIE, session_hash
from tests.servers import Inbox


@pytest.fixture
def browser(web_app: Flask) -> FlaskClient:
    return web_app.test_client()


def link_path(link: str) -> str:
    return "/" + link.split("://", 1)[1].split("/", 1)[1]


def test_a_reader_signs_in_with_the_mailed_link_and_out_again(
    browser: FlaskClient, mail_dir: Path, sample_settings: Settings
) -> None:
    assert browser.get("/list").status_code == 302  # not signed in: to the sign-in page
    sign_in(browser, "Ada@Example.org ", mail_dir)
    message = mails(mail_dir)[-1]
    assert message["To"] == "ada@example.org" and message["Subject"] == "Sign in to paperrec"
    page = browser.get("/list")
    assert page.status_code == 200 and "Your list" in page.text
    assert "ada@example.org" in page.text
    cookie = browser.get_cookie(COOKIE)
    assert cookie is not None and cookie.http_only and cookie.same_site == "Lax"
    client = redis.Redis.from_url(sample_settings.redis_url, decode_responses=True)
    key = f"{sample_settings.redis_namespace}:web-session:{session_hash(cookie.value)}"
    assert client.exists(key)

    assert post_form(browser, "/list", "/sign-out").status_code == 303
    assert not client.exists(key)  # the session is gone from Redis, not just the cookie
    assert browser.get("/list").status_code == 302


def test_the_session_id_changes_at_sign_in(browser: FlaskClient, mail_dir: Path) -> None:
    csrf_token(browser, "/sign-in")  # a visitor's session (for the form's token)
    before = browser.get_cookie(COOKIE)
    assert before is not None
    sign_in(browser, "ada@example.org", mail_dir)
    after = browser.get_cookie(COOKIE)
    assert after is not None and after.value != before.value


def test_the_answer_is_the_same_for_a_known_and_an_unknown_address(
    browser: FlaskClient, mail_dir: Path, web_app: Flask
) -> None:
    sign_in(browser, "known@example.org", mail_dir)
    post_form(browser, "/list", "/sign-out")
    answers = []
    for address in ("known@example.org", "never-seen@example.org"):
        visitor = web_app.test_client()
        first = ask_for_link(visitor, address)
        answers.append((first.status_code, first.headers["Location"],
                        visitor.get(first.headers["Location"]).text))
    assert answers[0] == answers[1]
    assert "If the address can receive mail" in answers[0][2]


def test_a_link_works_once(browser: FlaskClient, mail_dir: Path, web_app: Flask) -> None:
    ask_for_link(browser, "ada@example.org")
    path = link_path(sign_in_link(mails(mail_dir)[-1]))
    assert browser.get(path).status_code == 200  # looking at it uses nothing (mail scanners)
    assert post_form(browser, path, path.split("?")[0]).status_code == 303
    other = web_app.test_client()
    again = other.get(path)
    assert again.status_code == 410 and "already used" in again.text
    assert "<html" in again.text and "Traceback" not in again.text


def test_an_altered_link_or_one_made_elsewhere_does_not_sign_in(
    browser: FlaskClient, web_app: Flask
) -> None:
    with web_app.app_context():
        links: SignInLinks = web_app.extensions["paperrec.web"].sign_in_links
        token = links.sign("ada@example.org")
        elsewhere = SignInLinks(b"another deployment's secret", links._redis,  # noqa: SLF001
                                links._keys).sign("ada@example.org")  # noqa: SLF001
    # The signature's last base64 character carries bits that decoding ignores, so alter one
    # that every bit of counts: the fifth from the end, to a character it is not.
    altered = f"{token[:-5]}{'B' if token[-5] == 'A' else 'A'}{token[-4:]}"
    for bad in (altered, elsewhere):
        page = browser.get(f"/sign-in/link/{bad}")
        assert page.status_code == 403 and "not valid" in page.text
        refused = post_form(browser, f"/sign-in/link/{token}", f"/sign-in/link/{bad}")
        assert refused.status_code == 403
    assert browser.get("/list").status_code == 302  # not signed in


def test_a_link_expires_after_15_minutes(browser: FlaskClient, web_app: Flask) -> None:
    with web_app.app_context():
        links: SignInLinks = web_app.extensions["paperrec.web"].sign_in_links
        token = links.sign("ada@example.org")
    original = links.seconds
    object.__setattr__(links, "seconds", 0)
    try:
        time.sleep(1.1)
        page = browser.get(f"/sign-in/link/{token}")
    finally:
        object.__setattr__(links, "seconds", original)
    assert page.status_code == 410 and "expired" in page.text


def test_sign_in_mails_are_rate_limited_per_address(browser: FlaskClient, mail_dir: Path) -> None:
    codes = [ask_for_link(browser, "ada@example.org").status_code for _ in range(6)]
    assert codes == [303] * 5 + [429]
    page = ask_for_link(browser, "ada@example.org")
    assert page.status_code == 429 and "Too many requests" in page.text
    assert int(page.headers["Retry-After"]) > 0
    assert len(mails(mail_dir)) == 5
    assert ask_for_link(browser, "ben@example.org").status_code == 303  # another address


def test_a_form_without_its_csrf_token_is_refused(browser: FlaskClient, mail_dir: Path) -> None:
    refused = browser.post("/sign-in", data={"email": "ada@example.org"})
    assert refused.status_code == 400 and "form has expired" in refused.text
    assert not mails(mail_dir)
    sign_in(browser, "ada@example.org", mail_dir)
    forged = browser.post("/sign-out", data={"csrf_token": "forged"})
    assert forged.status_code == 400
    assert browser.get("/list").status_code == 200  # still signed in


def test_the_api_needs_no_csrf_token(client: FlaskClient) -> None:
    response = client.put("/v1/users/ada/subscription", json={"email": "ada@example.org"})
    assert response.status_code == 200


def test_an_address_is_the_api_user_of_the_same_id() -> None:
    assert user_id_for(" Ada@Example.ORG") == "ada@example.org"
    odd = user_id_for("o'brien@example.org")
    assert odd.startswith("email-") and odd == user_id_for("O'Brien@example.org")


def test_not_an_address_is_said_on_the_page(browser: FlaskClient, mail_dir: Path) -> None:
    page = ask_for_link(browser, "not an address")
    assert page.status_code == 400 and "does not look like an email address" in page.text
    assert not mails(mail_dir)


def test_sign_in_mails_are_rate_limited_per_client(browser: FlaskClient, mail_dir: Path) -> None:
    codes = [ask_for_link(browser, f"reader{n}@example.org").status_code for n in range(21)]
    assert codes == [303] * 20 + [429]
    assert len(mails(mail_dir)) == 20


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/",
                                    "/\\evil.example", "javascript:alert(1)"])
def test_after_sign_in_the_reader_stays_on_this_site(
    browser: FlaskClient, mail_dir: Path, target: str
) -> None:
    assert post_form(browser, "/sign-in", "/sign-in", email="ada@example.org",
                     next=target).status_code == 303
    path = link_path(sign_in_link(mails(mail_dir)[-1]))
    done = post_form(browser, path, path.split("?")[0], next=target)
    # the default target: the list, or for a new reader (as ada is here) the welcome page
    assert done.status_code == 303 and done.headers["Location"] == "/welcome"


def test_through_smtp_a_refused_mailbox_gets_the_same_answer(
    make_app: Callable[[Settings], Flask], sample_settings: Settings
) -> None:
    inbox = Inbox()
    smtp = Controller(inbox, hostname="127.0.0.1", port=free_port())
    smtp.start()
    try:
        app = make_app(sample_settings.replace(smtp_url=f"smtp://127.0.0.1:{smtp.port}"))
        answers = [ask_for_link(app.test_client(), address)
                   for address in ("ada@example.org", "refuse-me@example.org")]
    finally:
        smtp.stop()
    assert [(a.status_code, a.headers["Location"]) for a in answers] == [
        (303, "/sign-in/sent")] * 2
    assert [m["To"] for m in inbox.messages] == ["ada@example.org"]
    assert "/sign-in/link/" in sign_in_link(inbox.messages[0])

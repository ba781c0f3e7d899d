"""Threat: a client key or a signed-in reader points digests at a mailbox that never agreed.

An address a subscription names gets one email asking it to confirm, and nothing else until
the button behind that email's link is pressed: no digest before; opening the link (what a
mail scanner does) confirms nothing; a link works once, in any encoding of its token, for 7
days, and only for the user and the address it names. The address a reader signed in with is
theirs already: confirmed at once. Confirmation emails are bounded per user and per address,
so asking for confirmations is no mail cannon either. Subscriptions stored before addresses
were confirmed keep their digests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from recommender import wiring
from recommender.core.config import Settings
from recommender.digest.job import DigestSummary
from recommender.storage.redis_keys import bucket_of
from replay.server import free_port
from replay.web_steps import (
    CONFIRMATION_SUBJECT,
    confirm_address,
    confirmation_path,
    mails,
    post_form,
)
from service.cli import main
from tests.servers import Inbox
from tests.token_variants import same_bytes_variants

DAY = 86_400.0
MakeApp = Callable[[Settings], Flask]


def put(client: FlaskClient, user: str, address: str, **extra: Any) -> TestResponse:
    """Set the subscription through the API (every paper worth sending: the sample corpus
    says little about probability)."""
    extra.setdefault("min_probability", 0.0)
    return client.put(f"/v1/users/{user}/subscription", json={"email": address, **extra})


def confirmed(client: FlaskClient, user: str) -> bool:
    found = client.get(f"/v1/users/{user}/subscription")
    assert found.status_code == 200, found.json
    return bool(found.json["confirmed"])


def send(settings: Settings) -> DigestSummary:
    """``paperrec digest`` now."""
    return wiring.build(settings).send_digests(time.time(), progress=False)


def test_no_digest_goes_to_an_address_before_its_link_is_pressed(
    mail_settings: Settings, inbox: Inbox, make_app: MakeApp, like: Any, paper_ids_about: Any,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    client = make_app(mail_settings).test_client()
    like(client, "ada", paper_ids_about(mail_settings, "federated")[0])
    answer = put(client, "ada", "ada@example.org", frequency="daily")
    assert answer.status_code == 200
    assert (answer.json["confirmed"], answer.json["confirmed_at"]) == (False, None)
    [message] = inbox.messages
    assert (message["To"], message["Subject"]) == ("ada@example.org", CONFIRMATION_SUBJECT)

    for name, value in (("PAPERREC_DATA_DIR", str(mail_settings.data_dir)),
                        ("REDIS_URL", mail_settings.redis_url),
                        ("PAPERREC_REDIS_NAMESPACE", mail_settings.redis_namespace),
                        ("SMTP_URL", mail_settings.smtp_url)):
        monkeypatch.setenv(name, value)

    def digest_job() -> str:
        assert main(["digest", "--quiet"]) == 0
        return capsys.readouterr().out.strip()

    waiting = "digest: due 0, sent 0, failed 0, skipped 1 (1 address not confirmed)"
    assert digest_job() == waiting
    path = confirmation_path(message)
    for _ in range(2):  # a mail scanner, then the reader: looking confirms nothing
        page = client.get(path)
        assert page.status_code == 200
        assert ("Send a daily digest of research papers to <strong>ada@example.org</strong>?"
                in page.text)
        assert '<button type="submit">Yes, send me the digest</button>' in page.text
    assert not confirmed(client, "ada")
    assert digest_job() == waiting
    assert inbox.messages == [message]

    done = client.post(path)
    assert done.status_code == 200
    assert "Confirmed: paperrec digests will go to <strong>ada@example.org</strong>." in done.text
    subscription = client.get("/v1/users/ada/subscription").json
    assert subscription["confirmed"] is True
    assert subscription["confirmed_at"] >= subscription["created_at"]
    assert digest_job() == "digest: due 1, sent 1, failed 0, skipped 0 (none)"
    [digest] = inbox.messages[1:]
    assert digest["To"] == "ada@example.org" and digest["Subject"] != CONFIRMATION_SUBJECT


def test_a_used_link_confirms_nothing_again_in_any_encoding(
    mail_settings: Settings, inbox: Inbox, make_app: MakeApp
) -> None:
    client = make_app(mail_settings).test_client()
    put(client, "ada", "ada@example.org")
    [first] = inbox.messages
    path = confirmation_path(first)
    assert client.post(path).status_code == 200
    # The reader unsubscribes; a client subscribes the address again: it waits once more, and
    # the old link, seen in a forwarded mail or a proxy's log, must not answer for it.
    assert client.delete("/v1/users/ada/subscription").status_code == 204
    assert put(client, "ada", "ada@example.org").json["confirmed"] is False
    token = path.rsplit("/", 1)[1]
    variants = [token, *same_bytes_variants(token)]
    assert len(variants) >= 6
    for variant in variants:
        for method in (client.get, client.post):
            page = method(f"/v1/confirmations/{variant}")
            assert page.status_code == 410, (variant, page.status_code)
            assert "already used" in page.text and "<button" not in page.text
    assert not confirmed(client, "ada")
    assert send(mail_settings).skipped["address not confirmed"] == 1
    [_, second] = inbox.messages  # the new email's link is the one that works
    assert client.post(confirmation_path(second)).status_code == 200
    assert confirmed(client, "ada")


def test_an_expired_link_confirms_nothing(mail_settings: Settings, make_app: MakeApp) -> None:
    app = make_app(mail_settings)
    client = app.test_client()
    put(client, "ada", "ada@example.org")
    links = app.extensions["paperrec"].confirmations
    expired = links.sign("ada", "ada@example.org", time.time() - 8 * DAY)
    for method in (client.get, client.post):
        page = method(f"/v1/confirmations/{expired}")
        assert page.status_code == 410 and "expired on" in page.text
    assert not confirmed(client, "ada")
    six_days_old = links.sign("ada", "ada@example.org", time.time() - 6 * DAY)
    assert client.post(f"/v1/confirmations/{six_days_old}").status_code == 200
    assert confirmed(client, "ada")


def test_a_link_confirms_only_the_user_and_the_address_it_names(
    mail_settings: Settings, inbox: Inbox, make_app: MakeApp
) -> None:
    app = make_app(mail_settings)
    client = app.test_client()
    for user in ("ada", "bob"):  # one address, two users: each confirms for itself
        put(client, user, "shared@example.org")
    ada_link, bob_link = (confirmation_path(m) for m in inbox.messages)
    assert client.post(ada_link).status_code == 200
    assert confirmed(client, "ada") and not confirmed(client, "bob")

    # ada's digest moves to another address: a link for the first one confirms nothing now.
    put(client, "ada", "ada@example.org")
    links = app.extensions["paperrec"].confirmations
    stale = f"/v1/confirmations/{links.sign('ada', 'shared@example.org', time.time())}"
    for method in (client.get, client.post):
        page = method(stale)
        assert page.status_code == 410 and "no longer goes to" in page.text
    assert not confirmed(client, "ada")

    # A payload naming ada under bob's signature, and tokens this service signed for other
    # purposes (a digest's unsubscribe link, a sign-in link), are not confirmation links.
    bob_token = bob_link.rsplit("/", 1)[1]
    ada_payload = links.sign("ada", "ada@example.org", time.time()).split(".")[0]
    forged = f"{ada_payload}.{bob_token.split('.')[1]}"
    others = [forged, app.extensions["paperrec"].links.sign("ada", "unsubscribe", None, 0.0),
              app.extensions["paperrec.web"].sign_in_links.sign("ada@example.org")]
    for token in others:
        for method in (client.get, client.post):
            page = method(f"/v1/confirmations/{token}")
            assert page.status_code == 403 and "not valid" in page.text, token
    assert not confirmed(client, "ada") and not confirmed(client, "bob")
    assert client.post(bob_link).status_code == 200 and confirmed(client, "bob")


def test_the_address_a_reader_signed_in_with_is_confirmed_at_once_another_waits(
    ada: FlaskClient, web_app: Flask, mail_dir: Path
) -> None:
    signed_in = len(mails(mail_dir))  # the sign-in email
    assert post_form(ada, "/digest", "/digest", frequency="weekly").status_code == 303
    page = ada.get("/digest").text
    assert "Subscribed: a weekly digest of up to 10 papers to ada@example.org." in page
    assert "Waiting for confirmation" not in page and confirmed(ada, "ada@example.org")
    assert len(mails(mail_dir)) == signed_in  # no confirmation email

    assert post_form(ada, "/digest", "/digest", email="Ada.Work@Example.org").status_code == 303
    page = ada.get("/digest").text
    assert ("Waiting for confirmation: we sent a link to <strong>ada.work@example.org</strong>."
            in page)
    assert "Send the link again" in page and not confirmed(ada, "ada@example.org")
    [sent] = mails(mail_dir)[signed_in:]  # no SMTP server: written to PAPERREC_MAIL_DIR
    assert sent["To"] == "ada.work@example.org"

    assert ada.post("/digest/confirmation").status_code == 400  # no CSRF token: not sent
    for _ in range(2):  # the link again, twice: three emails in all, the most an hour
        assert post_form(ada, "/digest", "/digest/confirmation").status_code == 303
    assert "We sent another link to ada.work@example.org." in ada.get("/digest").text
    too_many = post_form(ada, "/digest", "/digest/confirmation")
    assert too_many.status_code == 429
    assert "Too many confirmation emails for this user (at most 3 an hour)" in too_many.text
    first, *_, last = mails(mail_dir)[signed_in:]
    assert len(mails(mail_dir)) == signed_in + 3

    confirm_address(web_app.test_client(), last)  # the work mailbox's reader, not signed in
    page = ada.get("/digest").text
    assert "Waiting for confirmation" not in page
    assert "papers goes to <strong>ada.work@example.org</strong>" in page
    already = web_app.test_client().get(confirmation_path(first))
    assert already.status_code == 200 and "Already confirmed" in already.text
    assert "<button" not in already.text
    assert post_form(ada, "/digest", "/digest/confirmation").status_code == 303  # a stale tab
    assert "There is no address waiting for its confirmation." in ada.get("/digest").text
    assert len(mails(mail_dir)) == signed_in + 3


def test_a_client_key_cannot_vouch_for_an_address_by_naming_the_user_after_it(
    client: FlaskClient, sample_settings: Settings
) -> None:
    """Only a signed-in session proves an address; an API call naming user "ada@example.org"
    and the address ada@example.org proves nothing."""
    answer = put(client, "ada@example.org", "ada@example.org")
    assert answer.status_code == 200 and answer.json["confirmed"] is False
    [message] = mails(sample_settings.data_dir / "mail")  # PAPERREC_MAIL_DIR's default
    assert message["To"] == "ada@example.org"


def test_confirmation_emails_are_bounded_per_user_and_per_address(
    mail_settings: Settings, inbox: Inbox, make_app: MakeApp
) -> None:
    client = make_app(mail_settings).test_client()
    for n in range(3):  # setting an address still waiting sends its link again
        assert put(client, "ada", "x@example.org", max_items=n + 1).status_code == 200
    refused = put(client, "ada", "x@example.org", max_items=9)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    message = refused.json["error"]["message"]
    assert "too many confirmation emails for this user (at most 3 an hour)" in message
    assert "Nothing was changed." in message
    assert client.get("/v1/users/ada/subscription").json["max_items"] == 3
    assert put(client, "ada", "y@example.org").status_code == 429  # the user's, any address
    assert len(inbox.messages) == 3

    # Many users cannot do what one cannot: the address has its own count.
    codes = [put(client, f"u{n}", "victim@example.org").status_code for n in range(6)]
    assert codes == [200] * 5 + [429]
    assert "to this address (at most 5 a day)" in put(
        client, "u9", "victim@example.org").json["error"]["message"]
    assert len(inbox.to("victim@example.org")) == 5

    # A confirmed address costs no email: setting it again is never refused.
    confirm_address(client, inbox.to("victim@example.org")[0])  # u0's
    for n in range(1, 6):
        answer = put(client, "u0", "victim@example.org", max_items=n)
        assert answer.status_code == 200 and answer.json["confirmed"] is True
    assert len(inbox.to("victim@example.org")) == 5


def test_subscriptions_from_before_confirmation_keep_their_digests(
    mail_settings: Settings, inbox: Inbox, make_app: MakeApp, like: Any, paper_ids_about: Any
) -> None:
    client = make_app(mail_settings).test_client()
    like(client, "bob", paper_ids_about(mail_settings, "federated")[0])
    keys = client.application.extensions["paperrec"].keys
    stored = redis.Redis.from_url(mail_settings.redis_url)  # as an older paperrec wrote it
    stored.hset(keys.subscription("bob"), mapping={
        "email": "bob@example.org", "frequency": "daily", "max_items": 5,
        "min_probability": 0.0, "created_at": 1_700_000_000.0})
    stored.sadd(keys.subscribers(bucket_of("bob")), "bob")
    found = client.get("/v1/users/bob/subscription").json
    assert (found["confirmed"], found["confirmed_at"]) == (True, None)
    assert send(mail_settings).sent == 1
    [digest] = inbox.messages
    assert digest["To"] == "bob@example.org" and digest["Subject"] != CONFIRMATION_SUBJECT

    assert put(client, "bob", "bob@example.org", frequency="weekly").json["confirmed"] is True
    assert put(client, "bob", "robert@example.org").json["confirmed"] is False
    back = put(client, "bob", "bob@example.org")  # the old confirmation does not come back
    assert back.json["confirmed"] is False
    assert [m["To"] for m in inbox.messages[1:]] == ["robert@example.org", "bob@example.org"]


def test_a_mail_server_that_cannot_take_the_email_is_a_503_and_no_digest(
    sample_settings: Settings, make_app: MakeApp
) -> None:
    settings = sample_settings.replace(smtp_url=f"smtp://127.0.0.1:{free_port()}")
    client = make_app(settings).test_client()
    answer = put(client, "ada", "ada@example.org")
    assert answer.status_code == 503 and answer.headers["Retry-After"]
    assert "could not be sent just now" in answer.json["error"]["message"]
    assert not confirmed(client, "ada")
    assert send(settings).skipped["address not confirmed"] == 1

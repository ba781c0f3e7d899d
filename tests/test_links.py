"""The links of the digest emails: a GET shows what a link would do and records nothing (mail
scanners fetch every link), a POST (the page's button, RFC 8058 one-click) records; tokens
are signed with itsdangerous and the old format still verifies; the link-signing secret is one
per data directory, even when many workers start at once."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import multiprocessing
import re
import time
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from recommender import wiring
from recommender.core.config import Settings
from recommender.core.errors import ExpiredLink, InvalidLink
from recommender.core.papers import Paper
from recommender.digest.links import LinkClaim, LinkSigner, load_secret
from service.app import create_app


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


# --- following a link: GET shows, POST records --------------------------------------------
MARKUP_TITLE = 'Why <script>alert("x")</script> & "quotes" break naive pages'


def _app_with_papers(settings: Settings) -> tuple[FlaskClient, LinkSigner]:
    """The service over a corpus of two papers (one titled with markup), and its link signer."""
    parts = wiring.build(settings)
    parts.corpus.upsert([Paper("pl-fed", "FedScar: federated optimization"),
                         Paper("pl-markup", MARKUP_TITLE)])
    return create_app(parts=parts).test_client(), parts.links


def _feedback(client: FlaskClient, user: str) -> list[tuple[str, str]]:
    response = client.get(f"/v1/users/{user}/feedback")
    assert response.status_code == 200, response.text
    return [(i["paper_id"], i["signal"]) for i in response.json["items"]]


def _subscribed(client: FlaskClient, user: str) -> bool:
    return client.get(f"/v1/users/{user}/subscription").status_code == 200


def test_a_get_shows_what_the_link_would_do_and_records_nothing(settings: Settings) -> None:
    client, links = _app_with_papers(settings)
    client.put("/v1/users/ada/subscription", json={"email": "ada@example.org"})
    now = time.time()
    like = client.get(f"/v1/links/{links.sign('ada', 'like', 'pl-fed', now)}")
    assert like.status_code == 200 and like.content_type == "text/html; charset=utf-8"
    assert "Record that you want more papers like" in like.text
    assert "\u201cFedScar: federated optimization\u201d" in like.text
    assert re.search(r'<form method="post">\s*<button type="submit">Yes, more like this</button>',
                     like.text)
    dislike = client.get(f"/v1/links/{links.sign('ada', 'dislike', 'pl-fed', now)}")
    assert "not interested in" in dislike.text and "FedScar" in dislike.text
    unsubscribe_url = f"/v1/links/{links.sign('ada', 'unsubscribe', None, now)}"
    unsubscribe = client.get(unsubscribe_url)
    assert "Unsubscribe <strong>ada@example.org</strong> from paperrec digests?" in (
        unsubscribe.text)
    assert '<button type="submit">Unsubscribe</button>' in unsubscribe.text
    # A scanner fetching each link again, with a HEAD too, still records nothing.
    for url in (unsubscribe_url, f"/v1/links/{links.sign('ada', 'like', 'pl-fed', now)}"):
        assert client.get(url + "?utm_source=scanner").status_code == 200
        assert client.head(url).status_code == 200
    assert _feedback(client, "ada") == [] and _subscribed(client, "ada")
    assert like.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in like.headers["Content-Security-Policy"]


def test_the_button_records_and_pressing_it_again_changes_nothing(settings: Settings) -> None:
    client, links = _app_with_papers(settings)
    now = time.time()
    like_url = f"/v1/links/{links.sign('ada', 'like', 'pl-fed', now)}"
    done = client.post(like_url)  # what the page's form sends: no fields
    assert done.status_code == 200 and "Recorded: more like" in done.text
    assert "<form" not in done.text
    assert _feedback(client, "ada") == [("pl-fed", "like")]
    assert client.post(like_url).status_code == 200
    assert _feedback(client, "ada") == [("pl-fed", "like")]
    dislike = client.post(f"/v1/links/{links.sign('ada', 'dislike', 'pl-markup', now)}")
    assert dislike.status_code == 200 and "Recorded: not interested in" in dislike.text
    assert _feedback(client, "ada") == [("pl-fed", "like"), ("pl-markup", "dislike")]
    assert _feedback(client, "bob") == []


def test_an_rfc_8058_one_click_post_unsubscribes_at_once(settings: Settings) -> None:
    client, links = _app_with_papers(settings)
    for user in ("ada", "bob", "cy"):
        client.put(f"/v1/users/{user}/subscription", json={"email": f"{user}@example.org"})
    now = time.time()
    ada = f"/v1/links/{links.sign('ada', 'unsubscribe', None, now)}"
    # RFC 8058 3.2: the body is List-Unsubscribe=One-Click, form-urlencoded or multipart;
    # no cookies, no authorization; the answer must not be a redirect.
    urlencoded = client.post(ada, data="List-Unsubscribe=One-Click",
                             content_type="application/x-www-form-urlencoded")
    assert urlencoded.status_code == 200 and "Location" not in urlencoded.headers
    assert "You are unsubscribed" in urlencoded.text and "ada@example.org" in urlencoded.text
    assert not _subscribed(client, "ada") and _subscribed(client, "bob")
    bob = f"/v1/links/{links.sign('bob', 'unsubscribe', None, now)}"
    multipart = client.post(bob, data={"List-Unsubscribe": "One-Click"},
                            content_type="multipart/form-data")
    assert multipart.status_code == 200 and not _subscribed(client, "bob")
    # Again, by a retrying mail client or the page's button: harmless.
    again = client.post(ada, data="List-Unsubscribe=One-Click",
                        content_type="application/x-www-form-urlencoded")
    assert again.status_code == 200 and "You are unsubscribed" in again.text
    assert "Already unsubscribed" in client.get(ada).text and "<form" not in client.get(ada).text
    assert _subscribed(client, "cy")


def _flip_first_signature_character(token: str) -> str:
    # Not the last: its low bits are base64 padding, which decoding ignores.
    body, signature = token.split(".")
    return f"{body}.{'B' if signature[0] == 'A' else 'A'}{signature[1:]}"


def test_forged_altered_or_expired_links_record_nothing_on_get_or_post(
    settings: Settings
) -> None:
    client, links = _app_with_papers(settings)
    client.put("/v1/users/ada/subscription", json={"email": "ada@example.org"})
    now = time.time()
    good = links.sign("ada", "like", "pl-fed", now)
    body, signature = good.split(".")
    eve = links.sign("eve", "like", "pl-fed", now).split(".")[0]
    other_secret = LinkSigner(b"another-deployments-secret").sign("ada", "like", "pl-fed", now)
    forged = [eve + "." + signature, body + ".AAAA", "garbage", body[:-2] + "." + signature,
              other_secret, _flip_first_signature_character(
                  links.sign("ada", "unsubscribe", None, now))]
    for bad in forged:
        for method in (client.get, client.post):
            page = method(f"/v1/links/{bad}")
            assert page.status_code == 403, bad
            assert "This link is not valid" in page.text and "Nothing was recorded" in page.text
            assert "<form" not in page.text
    month_ago = now - 31 * 86400
    expired = [links.sign("ada", "like", "pl-fed", month_ago),
               links.sign("ada", "unsubscribe", None, month_ago)]
    day = dt.datetime.fromtimestamp(int(month_ago) + 30 * 86400, dt.UTC).date().isoformat()
    for token in expired:
        for method in (client.get, client.post):
            page = method(f"/v1/links/{token}", data="List-Unsubscribe=One-Click",
                          content_type="application/x-www-form-urlencoded")
            assert page.status_code == 410 and f"expired on {day}" in page.text
            assert "<form" not in page.text
    assert _feedback(client, "ada") == [] and _feedback(client, "eve") == []
    assert _subscribed(client, "ada")


def test_a_link_to_a_paper_no_longer_in_the_collection_records_nothing(
    settings: Settings
) -> None:
    client, links = _app_with_papers(settings)
    gone = f"/v1/links/{links.sign('ada', 'like', 'pl-removed', time.time())}"
    for method in (client.get, client.post):
        page = method(gone)
        assert page.status_code == 404 and "removed from the collection" in page.text
    assert _feedback(client, "ada") == []


def test_the_pages_escape_a_title_holding_markup(settings: Settings) -> None:
    client, links = _app_with_papers(settings)
    url = f"/v1/links/{links.sign('ada', 'dislike', 'pl-markup', time.time())}"
    escaped = "Why &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#34;quotes&#34;"
    for page in (client.get(url), client.post(url)):
        assert page.status_code == 200
        assert escaped in page.text
        # the title's markup is text; the only script is the site's own file (the web
        # pages' frame), and nothing is loaded from elsewhere
        ours = page.text.replace('<script src="/static/web.js" defer></script>', "", 1)
        assert "<script" not in ours and "http" not in page.text
        assert page.headers["Content-Security-Policy"].startswith("default-src 'none'")


def test_an_old_format_link_shows_on_get_and_records_on_post(settings: Settings) -> None:
    client, _ = _app_with_papers(settings)
    secret = load_secret(settings.secret_key, settings.data_dir)
    old = f"/v1/links/{_old_format_token(secret, 'ada', 'like', 'pl-fed', time.time() + 86400)}"
    assert "FedScar" in client.get(old).text and _feedback(client, "ada") == []
    assert client.post(old).status_code == 200
    assert _feedback(client, "ada") == [("pl-fed", "like")]
    forged = _old_format_token(b"x" * 32, "eve", "like", "pl-fed", time.time() + 86400)
    assert client.post(f"/v1/links/{forged}").status_code == 403
    assert _feedback(client, "eve") == []


def test_the_document_says_get_shows_and_post_records(settings: Settings) -> None:
    client, _ = _app_with_papers(settings)
    operations = client.get("/openapi.json").json["paths"]["/v1/links/{token}"]
    assert "records nothing" in operations["get"]["summary"]
    assert "RFC 8058" in operations["post"]["summary"]
    assert "scanners" in operations["get"]["description"]
    assert operations["post"]["responses"]["200"]["content"] == {
        "text/html": {"schema": {"type": "string"}}}

"""A reader's steps through the web pages, as their browser takes them, through the Flask test
client: read a form's CSRF token off its page, ask for a sign-in link, read the link from the
email the service wrote (``PAPERREC_MAIL_DIR``, the development mailer), follow it; confirm a
digest address by the link of its confirmation email. The web pages' tests take them, and so
does the web page benchmark to sign its reader in."""

from __future__ import annotations

import email
import email.policy
import html
import re
from email.message import EmailMessage
from pathlib import Path

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

LINK = re.compile(r"https?://\S+/sign-in/link/\S+")
CONFIRMATION = re.compile(r"https?://[^/\s]+(/v1/confirmations/\S+)")
CONFIRMATION_SUBJECT = "Confirm your paperrec digest"
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_token(client: FlaskClient, path: str) -> str:
    """The CSRF token of the first form on the page at ``path``."""
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = TOKEN.search(page.text)
    assert found, f"no form with a CSRF token on {path}"
    return html.unescape(found[1])


def post_form(client: FlaskClient, page: str, to: str, **fields: str) -> TestResponse:
    """POST a form of ``page`` to ``to``, with the page's CSRF token."""
    return client.post(to, data={"csrf_token": csrf_token(client, page), **fields})


def mails(mail_dir: Path) -> list[EmailMessage]:
    """The messages the service wrote, oldest first."""
    files = sorted(mail_dir.glob("*.eml"), key=lambda p: p.stat().st_mtime_ns)
    return [email.message_from_bytes(p.read_bytes(), policy=email.policy.default)
            for p in files]


def _found_in(message: EmailMessage, pattern: re.Pattern[str], what: str) -> re.Match[str]:
    """``pattern`` in the plain-text part of the email (it must be there)."""
    body = message.get_body(("plain",))
    assert body is not None
    found = pattern.search(body.get_content())
    assert found, f"no {what} in the email"
    return found


def sign_in_link(message: EmailMessage) -> str:
    return _found_in(message, LINK, "sign-in link")[0]


def ask_for_link(client: FlaskClient, address: str) -> TestResponse:
    return post_form(client, "/sign-in", "/sign-in", email=address)


def sign_in(client: FlaskClient, address: str, mail_dir: Path) -> None:
    """Ask for a link, open the newest email's link, press its button: signed in."""
    assert ask_for_link(client, address).status_code == 303
    link = sign_in_link(mails(mail_dir)[-1])
    path = link.split("://", 1)[1].split("/", 1)[1]
    response = post_form(client, "/" + path, "/" + path.split("?")[0])
    assert response.status_code == 303, response.text


def confirmation_path(message: EmailMessage) -> str:
    """The path of the link in a confirmation email (``/v1/confirmations/<token>``)."""
    assert message["Subject"] == CONFIRMATION_SUBJECT, message["Subject"]
    return _found_in(message, CONFIRMATION, "confirmation link")[1]


def confirm_address(client: FlaskClient, message: EmailMessage) -> None:
    """Open a confirmation email's link and press the page's button, as the address's
    reader does: the address is confirmed."""
    path = confirmation_path(message)
    shown = client.get(path)
    assert shown.status_code == 200 and '<form method="post">' in shown.text, shown.text
    done = client.post(path)
    assert done.status_code == 200 and "Confirmed" in done.text, done.text

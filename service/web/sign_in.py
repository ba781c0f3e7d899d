"""Signing in by email, and out.

``POST /sign-in`` mails a link and answers the same page whatever the address: known or not,
the reader reads "a link is on its way" (any address may sign in; its first sign-in makes the
account). Mails are rate-limited per address and per client address. The link's ``GET`` only
shows a button (mail scanners fetch links: a link that signed in on GET would be used up by
them); its ``POST`` uses the link up and starts a new session. The email goes through the
configured mailer: ``SMTP_URL``, or an ``.eml`` file in ``PAPERREC_MAIL_DIR`` while no mail
server is set (development).
"""

from __future__ import annotations

import hashlib
import time
from email.message import EmailMessage
from email.utils import make_msgid
from urllib.parse import urlsplit

from flask import Response, current_app, flash, redirect, request, session, url_for

from recommender.core.config import Settings
from recommender.core.errors import InvalidInput, RateLimited
from recommender.wiring import Paperrec

from ..mail import send_now
from ..rate_limit import RateLimiter
from ..state import components
from .accounts import normalise_email, web_parts
from .blueprint import current_user, local_path, page, web
from .sessions import WebSession
from .welcome import first_page


@web.get("/sign-in")
def sign_in() -> Response:
    target = local_path(request.args.get("next"), url_for("web.reading_list"))
    if current_user() is not None:
        return redirect(target)  # type: ignore[return-value]
    return page("sign_in.html", next=target, error=None, address="")


@web.post("/sign-in")
def ask_for_link() -> Response:
    target = local_path(request.form.get("next"), url_for("web.reading_list"))
    address = request.form.get("email", "")
    try:
        email_address = normalise_email(address)
    except InvalidInput as exc:
        return page("sign_in.html", status=400, next=target, error=exc.message,
                    address=address[:254])
    _limit(web_parts().per_client, f"sign-in-client:{request.remote_addr or 'unknown'}",
           "from your network")
    hashed = hashlib.sha256(email_address.encode()).hexdigest()[:24]  # no address in a key
    _limit(web_parts().per_address, f"sign-in-address:{hashed}", "for this address")
    _limit(web_parts().overall, "sign-in-overall", "just now")
    parts = components()
    token = web_parts().sign_in_links.sign(email_address)
    link = parts.settings.public_url + url_for("web.open_link", token=token, next=target)
    send_now(parts.settings, sign_in_message(parts.settings, email_address, link), "sign-in")
    return redirect(url_for("web.link_sent"), code=303)  # type: ignore[return-value]


@web.get("/sign-in/sent")
def link_sent() -> Response:
    return page("sign_in_sent.html", mail_dir=_development_mail_dir(components()))


@web.get("/sign-in/link/<token>")
def open_link(token: str) -> Response:
    found = web_parts().sign_in_links.check(token)
    target = local_path(request.args.get("next"), url_for("web.reading_list"))
    return page("sign_in_link.html", address=found.email, next=target)


@web.post("/sign-in/link/<token>")
def use_link(token: str) -> Response:
    found = web_parts().sign_in_links.use(token)
    assert isinstance(session, WebSession)
    session.clear()
    session.regenerate()  # a new session id: the visitor's id is worth nothing now
    session["uid"] = found.user_id
    session["email"] = found.email
    session["since"] = int(time.time())
    flash(f"Signed in as {found.email}.")
    current_app.logger.info("web sign-in of user %s", found.user_id)
    target = local_path(request.form.get("next"), url_for("web.reading_list"))
    return redirect(first_page(found.user_id, target), code=303)  # type: ignore[return-value]


@web.post("/sign-out")
def sign_out() -> Response:
    assert isinstance(session, WebSession)
    session.end()
    return redirect(url_for("web.sign_in", signed_out=1), code=303)  # type: ignore[return-value]


def _limit(limiter: RateLimiter, identity: str, where: str) -> None:
    decision = limiter.hit(identity)
    if not decision.allowed:
        minutes = max(1, round(decision.retry_after / 60))
        raise RateLimited(f"too many sign-in emails {where}; try again in about "
                          f"{minutes} minute{'s' if minutes != 1 else ''}",
                          decision.retry_after)


def _development_mail_dir(parts: Paperrec) -> str | None:
    """Where the sign-in email was written, when no mail server is set and the service runs
    on this machine only (a developer's ``make run``); None otherwise."""
    mail_dir = parts.settings.mail_dry_run_dir
    host = urlsplit(parts.settings.public_url).hostname
    if mail_dir is None or host not in ("127.0.0.1", "localhost", "::1"):
        return None
    return str(mail_dir)


# --- the email ----------------------------------------------------------------------------

def sign_in_message(settings: Settings, email: str, link: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = settings.mail_from
    message["To"] = email
    message["Subject"] = "Sign in to paperrec"
    message["Message-ID"] = make_msgid(domain="paperrec")
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(
        "Someone (we hope you) asked to sign in to paperrec with this address.\n\n"
        f"Open this link to sign in (it works once, for 15 minutes):\n\n{link}\n\n"
        "If you did not ask, ignore this email: nothing happens without the link.\n",
        cte="7bit")  # ASCII, the link on one line (also in a dry-run .eml file)
    return message


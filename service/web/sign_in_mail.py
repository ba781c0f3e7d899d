"""The sign-in email: one link, sent through the configured mailer (``SMTP_URL``, or as an
``.eml`` file in ``PAPERREC_MAIL_DIR`` while no mail server is configured)."""

from __future__ import annotations

import hashlib
import logging
import secrets
import smtplib
import time
from email.message import EmailMessage
from email.utils import make_msgid

from recommender.core.config import Settings
from recommender.core.errors import Unavailable
from recommender.digest.mailer import Mailer

log = logging.getLogger(__name__)


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


def send_sign_in(settings: Settings, email: str, link: str) -> None:
    """Send (or, in development, write) the sign-in email; Unavailable when the mail server
    cannot take it (the reader may try again)."""
    mailer = Mailer(settings.smtp_url, settings.mail_dry_run_dir)
    name = (f"sign-in-{time.time_ns()}-{hashlib.sha256(email.encode()).hexdigest()[:12]}-"
            f"{secrets.token_hex(3)}")
    try:
        mailer.send(sign_in_message(settings, email, link), name)
    except (OSError, smtplib.SMTPException) as exc:
        log.warning("sign-in email not sent: %s", exc)
        raise Unavailable("the sign-in email could not be sent just now; try again in a "
                          "minute") from None
    finally:
        mailer.close()
    if mailer.dry_run:
        log.info("sign-in email written to %s (no SMTP_URL set)", mailer.dry_run_dir)

"""The service's own emails (a sign-in link, a digest address's confirmation link): one at a
time, at once, through ``SMTP_URL``, or while no mail server is set (development) written as
``.eml`` files into ``PAPERREC_MAIL_DIR`` (the digests are the job's: recommender/digest/job.py)."""

from __future__ import annotations

import hashlib
import logging
import secrets
import smtplib
import time
from email.message import EmailMessage

from recommender.core.config import Settings
from recommender.core.errors import Unavailable
from recommender.digest.mailer import Mailer

log = logging.getLogger(__name__)


def send_now(settings: Settings, message: EmailMessage, kind: str) -> None:
    """Send (or, in development, write) one ``kind`` of email ("sign-in"); Unavailable when
    the mail server cannot take it (the reader may try again)."""
    mailer = Mailer(settings.smtp_url, settings.mail_dry_run_dir)
    to = hashlib.sha256(str(message["To"]).encode()).hexdigest()[:12]  # no address in a name
    name = f"{kind}-{time.time_ns()}-{to}-{secrets.token_hex(3)}"
    try:
        mailer.send(message, name)
    except smtplib.SMTPRecipientsRefused:
        # The answer stays the same as for any address: whether a mailbox exists is the mail
        # server's to know, not something the service tells.
        log.info("%s email refused by the mail server for its recipient", kind)
    except (OSError, smtplib.SMTPException) as exc:
        log.warning("%s email not sent: %s", kind, exc)
        raise Unavailable(f"the {kind} email could not be sent just now; try again in a "
                          "minute") from None
    finally:
        mailer.close()
    if mailer.dry_run:
        log.info("%s email written to %s (no SMTP_URL set)", kind, mailer.dry_run_dir)

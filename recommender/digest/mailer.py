"""Mailer: SMTP (STARTTLS or SMTPS) or .eml files for --dry-run."""


from __future__ import annotations

import contextlib
import smtplib
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import unquote, urlsplit

from recommender.core.errors import InvalidInput


class Mailer:
    """Sends through SMTP_URL (smtp:// with STARTTLS when offered, or smtps://), or writes .eml
    files into a directory for --dry-run."""

    def __init__(self, smtp_url: str, dry_run_dir: Path | None) -> None:
        self.dry_run_dir = dry_run_dir
        self.smtp_url = smtp_url
        self._smtp: smtplib.SMTP | None = None
        if dry_run_dir is None and not smtp_url:
            raise InvalidInput("set SMTP_URL (e.g. smtp://user:pass@mail.example.org:587) or "
                               "pass --dry-run DIR to write the emails as .eml files")
        if dry_run_dir is not None:
            dry_run_dir.mkdir(parents=True, exist_ok=True)

    @property
    def dry_run(self) -> bool:
        """Messages are written as files: nothing is sent, nothing need be recorded."""
        return self.dry_run_dir is not None

    def send(self, message: EmailMessage, name: str) -> None:
        if self.dry_run_dir is not None:
            (self.dry_run_dir / f"{name}.eml").write_bytes(message.as_bytes())
            return
        if self._smtp is None:
            self._smtp = self._connect()
        self._smtp.send_message(message)

    def close(self) -> None:
        if self._smtp is not None:
            with contextlib.suppress(smtplib.SMTPException):
                self._smtp.quit()
            self._smtp = None

    def _connect(self) -> smtplib.SMTP:
        url = urlsplit(self.smtp_url)
        if url.scheme not in ("smtp", "smtps") or not url.hostname:
            raise InvalidInput(f"SMTP_URL must look like smtp://user:pass@host:587 or "
                               f"smtps://host:465, got {url.scheme}://{url.hostname}")
        if url.scheme == "smtps":
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(url.hostname, url.port or 465, timeout=30)
        else:
            smtp = smtplib.SMTP(url.hostname, url.port or 587, timeout=30)
            smtp.ehlo()
            if smtp.has_extn("starttls"):
                smtp.starttls()
                smtp.ehlo()
        if url.username:
            smtp.login(unquote(url.username), unquote(url.password or ""))
        return smtp



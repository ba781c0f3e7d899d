"""API keys: ``Authorization: Bearer <key>``, each key with a role (client or admin).

Keys come from ``PAPERREC_API_KEYS`` (comma-separated ``role:key``) or the file named by
``PAPERREC_API_KEYS_FILE`` (one ``role:key`` a line, ``#`` comments). Only their SHA-256
digests are kept in memory, and a presented key is compared with every digest in constant
time. With no keys configured the API is open, and ``paperrec serve`` only binds loopback.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

from flask import Flask, request

from recommender.errors import Forbidden, InvalidInput, Unauthorized

ROLES = ("client", "admin")
OPEN_ENDPOINTS = {"api.healthz", "api.readyz", "api.follow_link"}
ADMIN_ENDPOINTS = {"api.erase_user", "api.export_user"}


@dataclass(frozen=True)
class ApiKeys:
    digests: tuple[tuple[bytes, str], ...]  # (sha256 of the key, role)

    @classmethod
    def parse(cls, inline: str, file: str) -> ApiKeys:
        lines = [part.strip() for part in inline.split(",")]
        if file:
            try:
                text = Path(file).read_text()
            except OSError as exc:
                raise InvalidInput(f"PAPERREC_API_KEYS_FILE: cannot read {file}: {exc}") from exc
            lines += [line.split("#", 1)[0].strip() for line in text.splitlines()]
        entries = []
        for line in filter(None, lines):
            role, _, key = line.partition(":")
            if role not in ROLES or len(key) < 16:
                raise InvalidInput(f"API key entries are role:key with role client or admin and "
                                   f"a key of at least 16 characters; got {role!r}:…")
            entries.append((hashlib.sha256(key.encode()).digest(), role))
        return cls(tuple(entries))

    def __bool__(self) -> bool:
        return bool(self.digests)

    def role_of(self, key: str) -> str | None:
        presented = hashlib.sha256(key.encode()).digest()
        role = None
        for digest, candidate in self.digests:  # no early exit: same time for every key
            if hmac.compare_digest(presented, digest):
                role = candidate
        return role


def require_keys(app: Flask, keys: ApiKeys) -> None:
    if not keys:
        return

    @app.before_request
    def check_key() -> None:
        if request.endpoint in OPEN_ENDPOINTS:
            return
        header = request.headers.get("Authorization", "")
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key:
            raise Unauthorized("send an API key: Authorization: Bearer <key>")
        role = keys.role_of(key.strip())
        if role is None:
            raise Unauthorized("this API key is not valid")
        if role != "admin" and request.endpoint in ADMIN_ENDPOINTS:
            raise Forbidden("this needs an admin API key")

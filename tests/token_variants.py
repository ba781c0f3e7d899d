"""Other texts of one signed token: what a single-use link must refuse as firmly as the text
it was used in (tests/test_security_sign_in.py, tests/test_security_addresses.py).

itsdangerous decodes a signature's base64 leniently: it accepts padding ("="), skips
characters outside the alphabet ("!"), and ignores the spare low bits of the last character,
so one signature has many texts, each a token that verifies.
"""

from __future__ import annotations

import base64
import string

ALPHABET = string.ascii_letters + string.digits + "-_"


def same_bytes_variants(token: str) -> list[str]:
    """Other texts of the same token: padded, with skipped characters, and with the last
    character's spare bits changed (each checked to decode to the very same signature)."""
    head, _, signature = token.rpartition(".")
    decoded = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    spare = [f"{head}.{signature[:-1]}{c}" for c in ALPHABET if c != signature[-1]
             and base64.urlsafe_b64decode(signature[:-1] + c + "=" * (-len(signature) % 4))
             == decoded]
    assert spare or len(signature) % 4 == 0, "a signature of this length has spare bits"
    return [token + "=", token + "==", token + "!!", token + "!*!*", *spare]

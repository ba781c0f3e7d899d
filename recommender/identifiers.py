"""What a user id and a paper id may look like (documented in the README)."""

from __future__ import annotations

import re

from .errors import InvalidInput

MAX_ID_LENGTH = 128
# arXiv ids of the old kind carry a slash (hep-th/9901001), so paper ids may too.
PAPER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
USER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")


def validate_paper_id(paper_id: str) -> str:
    if not PAPER_ID_PATTERN.fullmatch(paper_id):
        raise InvalidInput(
            f"invalid paper id {_preview(paper_id)}: use 1 to {MAX_ID_LENGTH} characters of "
            f"letters, digits and . _ : / - (starting with a letter or digit)"
        )
    return paper_id


def validate_user_id(user_id: str) -> str:
    if not USER_ID_PATTERN.fullmatch(user_id):
        raise InvalidInput(
            f"invalid user id {_preview(user_id)}: use 1 to {MAX_ID_LENGTH} characters of "
            f"letters, digits and . _ @ + - (starting with a letter or digit)"
        )
    return user_id


def _preview(value: str) -> str:
    if len(value) > 40:
        return f"{value[:30]!r}… ({len(value)} characters)"
    return repr(value)

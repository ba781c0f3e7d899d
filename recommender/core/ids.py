"""What a user id and a paper id may look like (documented in the README)."""

from __future__ import annotations

import re

from recommender.core.errors import InvalidInput

MAX_ID_LENGTH = 128
# arXiv ids of the old kind carry a slash (hep-th/9901001), so paper ids may too.
PAPER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
USER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")


def validate_paper_id(paper_id: str) -> str:
    return _validate(paper_id, PAPER_ID_PATTERN, "paper", ". _ : / -")


def validate_user_id(user_id: str) -> str:
    return _validate(user_id, USER_ID_PATTERN, "user", ". _ @ + -")


def _validate(value: str, pattern: re.Pattern[str], what: str, punctuation: str) -> str:
    if not pattern.fullmatch(value):
        shown = f"{value[:30]!r}… ({len(value)} characters)" if len(value) > 40 else repr(value)
        raise InvalidInput(
            f"invalid {what} id {shown}: use 1 to {MAX_ID_LENGTH} characters of letters, "
            f"digits and {punctuation} (starting with a letter or digit)"
        )
    return value

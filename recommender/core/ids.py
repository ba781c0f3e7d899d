"""What a user id and a paper id may look like (documented in docs/guide/papers.md
and docs/api/index.md).

``UserId`` and ``PaperId`` are the types with those rules (and the words that describe them):
the API validates with them and the result types declare their ids with them, so its
document states the rule once.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from recommender.core.errors import InvalidInput

MAX_ID_LENGTH = 128
# arXiv ids of the old kind carry a slash (hep-th/9901001), so paper ids may too.
PAPER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
USER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")

# "example", not pydantic's "examples": an OpenAPI parameter's examples are a map, not a list.
UserId = Annotated[str, Field(
    pattern=USER_ID_PATTERN.pattern, max_length=MAX_ID_LENGTH,
    description=f"1 to {MAX_ID_LENGTH} characters of letters, digits and . _ @ + -, "
                "starting with a letter or digit",
    json_schema_extra={"example": "ada"})]
PaperId = Annotated[str, Field(
    pattern=PAPER_ID_PATTERN.pattern, max_length=MAX_ID_LENGTH,
    description=f"1 to {MAX_ID_LENGTH} characters of letters, digits and . _ : / -, "
                "starting with a letter or digit (old arXiv ids carry a slash)",
    json_schema_extra={"example": "pl-156475ca5364802b"})]


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

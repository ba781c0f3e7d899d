"""What several areas of the API share: the path parameters, the list sizes, the strict base of
every query and body model, and the JSON number types. Limits come from the library, so each
rule lives in one place (ids: recommender.core.ids).
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.json_schema import model_json_schema

from recommender.core.ids import PaperId, UserId
from recommender.feedback.collections import ID_PATTERN as COLLECTION_ID

MAX_K = 200  # items in one list, search or similar-papers answer
MAX_OFFSET = 1000  # how deep a reading list can be paged

K = Annotated[int, Field(ge=1, le=MAX_K, description=f"How many items, 1 to {MAX_K}.")]
Signal = Literal["like", "dislike"]
CollectionId = Annotated[str, Field(pattern=COLLECTION_ID, description=(
    "A collection's id (8 hex digits), as `POST /v1/users/{user_id}/collections` gave it."),
    json_schema_extra={"example": "3f9a0c1e"})]
MAX_COLLECTIONS_PER_PAPER = 10  # collections one feedback call may name
RuleAction = Literal["follow", "mute"]
RuleKind = Literal["author", "keyword", "category"]


class Strict(BaseModel):
    """Unknown fields are refused (a 400 that names them), not silently ignored.

    Its JSON schema is made once: flask-openapi3 asks for a query model's schema on every
    request (to read list parameters), and pydantic makes it anew each time, 1.3 ms for the
    reading list's query (measured here) in a call that takes a few.
    """

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if args or kwargs:
            return super().model_json_schema(*args, **kwargs)
        return _schema_of(cls)  # shared: read it, never change it


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model_json_schema(model)


class Answer(BaseModel):
    """A JSON answer of several parts. Every field is in every answer, so the document marks
    them all required (the library's result types inside it too)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


# --- path parameters --------------------------------------------------------------------------
class UserPath(BaseModel):
    user_id: UserId


class PaperPath(BaseModel):
    paper_id: PaperId


class UserPaperPath(BaseModel):
    user_id: UserId
    paper_id: PaperId


# --- JSON's number types, as JSON Schema has them ----------------------------------------------
def _json_integer(value: Any) -> Any:
    """JSON Schema's integer: 3 or 3.0, but not "3" or true."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ValueError("should be a whole number")
    return int(value)


def _json_number(value: Any) -> Any:
    """JSON Schema's number: 0.25 or 1, but not "0.25" or false."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("should be a number")
    return float(value)


def _iso_date(value: Any) -> Any:
    try:
        return dt.date.fromisoformat(value) if isinstance(value, str) else value
    except ValueError:
        raise ValueError("should be a date like 2026-01-31") from None


JsonInteger = Annotated[int, BeforeValidator(_json_integer)]
JsonNumber = Annotated[float, BeforeValidator(_json_number)]
IsoDate = Annotated[dt.date, BeforeValidator(_iso_date)]

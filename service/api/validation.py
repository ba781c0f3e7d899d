"""A request the models refuse, in words a client can act on: a 400 (service/errors.py) whose
message names every field concerned and the limit it broke.

flask-openapi3 validates a view's ``path``, ``query`` and ``body`` models and hands a failure
to ``refuse``, which raises InvalidInput instead of answering with pydantic's own list. The
messages come from the model's JSON schema ("k must be between 1 and 200, got '0'"), so they
cannot drift from the document. What the models cannot see, the query string as sent (a
parameter twice, or one where a call takes none), the area blueprints check before the view.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, NoReturn, get_type_hints

from flask import current_app, request
from pydantic import BaseModel, ValidationError

from recommender.core.errors import InvalidInput

# Where flask-openapi3 finds each part of a request (the view's parameter names) and what a
# message calls one of its fields.
PLACES = {"path": "path parameter", "query": "query parameter", "body": "field"}
_NOT_AN_OBJECT = {"model_type", "model_attributes_type", "dict_type", "json_invalid"}
_RANGE_ERRORS = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}
_SHAPE_ERRORS = {"string_pattern_mismatch", "string_too_long", "string_too_short"}


def refuse(error: ValidationError) -> NoReturn:
    """flask-openapi3's ``validation_error_callback``: the failure as an InvalidInput."""
    models = _models(_view())
    for place, what in PLACES.items():
        model = models.get(place)
        if model is not None and model.__name__ == error.title:
            if place == "body" and any(e["type"] in _NOT_AN_OBJECT and not e["loc"]
                                       for e in error.errors()):
                raise InvalidInput(f"the body must be a JSON object with the field(s) "
                                   f"{', '.join(model.model_fields)}, sent with "
                                   "Content-Type: application/json")
            raise InvalidInput(describe(error, what, model.model_json_schema()))
    raise InvalidInput(describe(error, "field", {}))


def one_value_each() -> None:
    """Before every API view: a query parameter given twice is refused, not read as its first
    value."""
    repeated = [name for name, values in request.args.lists() if len(values) > 1]
    if repeated:
        raise InvalidInput(f"query parameter(s) given more than once: {', '.join(repeated)}; "
                           "give each once")


def no_unknown_query() -> None:
    """Before the views of a JSON area: a query string where the call reads none is refused
    (a call with a ``query`` model refuses unknown parameters itself)."""
    if request.args and "query" not in _models(_view()):
        raise InvalidInput(f"unknown query parameter(s): {', '.join(request.args)}")


def _view() -> Callable[..., Any]:
    return current_app.view_functions[request.endpoint or ""]


@functools.cache
def _models(view: Callable[..., Any]) -> dict[str, type[BaseModel]]:
    """The models a view declares, by place, as flask-openapi3 reads them (its annotations)."""
    hints = get_type_hints(inspect.unwrap(view))
    return {place: hints[place] for place in PLACES if place in hints}


def describe(exc: ValidationError, what: str, schema: dict[str, Any]) -> str:
    """A validation failure in words a client can act on, naming every field concerned.

    ``schema`` is the JSON schema of what was validated: its limits and descriptions make
    the messages ("k must be between 1 and 200, got 0"), so they cannot drift from the docs.
    """
    errors = exc.errors()
    unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden"]
    problems = [f"unknown {what}(s): {', '.join(unknown)}; allowed: "
                f"{', '.join(schema.get('properties', {}))}"] if unknown else []
    for error in errors:
        if error["type"] == "extra_forbidden":
            continue
        name = str(error["loc"][0]) if error["loc"] else what.split()[-1]
        field_schema = schema.get("properties", {}).get(name, schema)
        options = [o for o in field_schema.get("anyOf", []) if o.get("type") != "null"]
        if options:  # an optional value: the limits are on its non-null form
            field_schema = {**options[0], **field_schema}
        given = error.get("input")
        got = "" if error["type"] == "missing" else f", got {_short(given)}"
        low, high = field_schema.get("minimum"), field_schema.get("maximum")
        if error["type"] == "missing":
            problems.append(f"{name} is required")
        elif error["type"] in _RANGE_ERRORS and low is not None and high is not None:
            problems.append(f"{name} must be between {low} and {high}{got}")
        elif error["type"] in _SHAPE_ERRORS and "description" in field_schema:
            problems.append(f"{name} must be {field_schema['description']}{got}")
        else:
            message = error["msg"].removeprefix("Value error, ")
            message = message[0].lower() + message[1:]
            problems.append(f"{name}: {message}{got}")
    return "; ".join(problems)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:50]}… ({len(str(value))} characters)"

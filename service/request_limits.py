"""Bounds on what one request may make the service read: its body and its JSON's nesting.

Every route takes a body of at most BODY_LIMIT (the library uploads: UPLOAD_LIMIT). A larger
declared Content-Length is refused with 413 before anything reads the body (not the session,
not the CSRF check); a chunked body is read through Werkzeug's limit and refused with 413 as
soon as it passes it, so an endless upload costs the limit and no more. JSON nested deeper
than MAX_JSON_DEPTH is refused with 400 before the parser recurses into it (1,000 levels made
the standard library's parser, or pydantic after it, raise RecursionError: a 500).
"""

from __future__ import annotations

import json
from typing import Any

from flask import Flask, request
from flask.json.provider import DefaultJSONProvider

from recommender.core.errors import InvalidInput, TooLarge

from .api.library import MAX_LIBRARY_BYTES

BODY_LIMIT = 256 * 1024  # a feedback, a rule, a subscription, a form: a few hundred bytes
UPLOAD_LIMIT = MAX_LIBRARY_BYTES + 64 * 1024  # a library file and its multipart envelope
UPLOADS = frozenset({"library.import_user_library", "web.import_file"})  # endpoints
MAX_JSON_DEPTH = 32


def install(app: Flask) -> None:
    """Call before anything else registers a ``before_request`` that may read the body."""
    app.config["MAX_CONTENT_LENGTH"] = BODY_LIMIT
    app.json = BoundedJSON(app)

    @app.before_request
    def bound_the_body() -> None:
        limit = UPLOAD_LIMIT if request.endpoint in UPLOADS else BODY_LIMIT
        request.max_content_length = limit
        too_large = TooLarge(f"the request body is larger than {limit // 1024} KB, the most "
                             f"this {'upload' if limit == UPLOAD_LIMIT else 'call'} takes")
        if (request.content_length or 0) > limit:
            raise too_large
        if request.content_length is None and limit == BODY_LIMIT:
            # A body of unsaid length (chunked): read now, one byte past the limit at most, so
            # that going past it is a 413 here, not a form cut short at the limit later (a 400
            # for a missing field). Werkzeug's stream ends quietly at its limit: hence the +1.
            request.max_content_length = limit + 1
            if len(request.get_data(cache=True)) > limit:
                raise too_large


class BoundedJSON(DefaultJSONProvider):
    """Flask's JSON, refusing nesting deeper than MAX_JSON_DEPTH before parsing."""

    sort_keys = False
    ensure_ascii = False

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        check_depth(s)
        return json.loads(s, **kwargs)


def check_depth(text: str | bytes) -> None:
    """InvalidInput when the JSON opens more than MAX_JSON_DEPTH arrays or objects inside one
    another. Counts brackets outside strings, and only when there are that many at all (a
    body of ordinary depth is not scanned)."""
    data = text.encode() if isinstance(text, str) else text
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return
    depth, in_string, escaped = 0, False, False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise InvalidInput(f"the JSON is nested more than {MAX_JSON_DEPTH} levels "
                                   f"deep; no call of this API takes that")
        elif byte in (0x5D, 0x7D):
            depth -= 1

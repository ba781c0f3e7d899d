"""Threat: a request that exhausts the service (memory, disk, a worker's time).

Anyone can send a body: it is bounded for every route, refused with 413 before it is read when
it says it is too large, and read no further than the limit when it does not say (chunked).
JSON nested too deep is a 400, never a 500.
"""

from __future__ import annotations

import io
import json

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import EnvironBuilder

from service.request_limits import BODY_LIMIT, MAX_JSON_DEPTH, UPLOAD_LIMIT


class EndlessBody(io.RawIOBase):
    """A request body that does not end (for the server: it stops at 32 MB, so that a server
    that reads it all fails the test rather than the machine), counting what is read of it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        n = min(len(buffer), 32 * 2**20 - self.read_bytes)
        buffer[:n] = b"a" * n
        self.read_bytes += n
        return n


def post(app: Flask, path: str, body: EndlessBody, content_type: str,
         length: int | None = None) -> tuple[int, str]:
    """POST ``body`` as a server hands it to the app: chunked (no length, the input ends
    where the server says) unless ``length`` is declared."""
    environ = EnvironBuilder(path=path, method="POST", content_type=content_type).get_environ()
    environ.pop("CONTENT_LENGTH", None)
    if length is None:
        environ.update({"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input_terminated": True})
    else:
        environ["CONTENT_LENGTH"] = str(length)
    environ["wsgi.input"] = body
    status: list[str] = []
    chunks = app(environ, lambda s, _headers, *_: status.append(s))  # type: ignore[arg-type]
    text = b"".join(chunks).decode()
    return int(status[0].split()[0]), text


def test_an_endless_chunked_post_is_read_no_further_than_the_limit(app: Flask) -> None:
    for path, kind in (("/sign-in", "application/x-www-form-urlencoded"),
                       ("/v1/users/ada/feedback/p1", "application/json"),
                       ("/v1/users/ada/library", "application/x-bibtex")):
        body = EndlessBody()
        status, _ = post(app, path, body, kind)
        assert status == 413, (path, status)
        limit = UPLOAD_LIMIT if path.endswith("library") else BODY_LIMIT
        assert body.read_bytes <= limit + 64 * 1024, (path, body.read_bytes)


def test_a_declared_huge_body_is_refused_before_anything_reads_it(app: Flask) -> None:
    body = EndlessBody()
    status, text = post(app, "/sign-in", body, "application/x-www-form-urlencoded",
                        length=500 * 2**20)
    assert status == 413  # not the 400 of the missing CSRF token: never read
    assert body.read_bytes == 0
    assert "larger than" in text


def test_a_json_body_over_the_limit_is_413(client: FlaskClient) -> None:
    big = json.dumps({"signal": "like", "padding": "x" * BODY_LIMIT})
    answer = client.put("/v1/users/ada/feedback/p1", data=big, content_type="application/json")
    assert answer.status_code == 413
    assert answer.json["error"]["code"] == "too_large"


def test_json_nested_a_thousand_deep_is_a_400_not_a_500(client: FlaskClient) -> None:
    for deep in ("[" * 1000 + "]" * 1000, '{"a":' * 1000 + "1" + "}" * 1000,
                 '{"signal": "like", "x": ' + "[" * 100 + "]" * 100 + "}"):
        answer = client.put("/v1/users/ada/feedback/p1", data=deep,
                            content_type="application/json")
        assert answer.status_code == 400, answer.text
        assert f"more than {MAX_JSON_DEPTH} levels" in answer.json["error"]["message"]


def test_brackets_inside_strings_are_not_nesting(client: FlaskClient) -> None:
    body = json.dumps({"signal": "like", "note": "[" * 100})
    answer = client.put("/v1/users/ada/feedback/p1", data=body, content_type="application/json")
    assert answer.status_code != 400 or "levels" not in answer.text

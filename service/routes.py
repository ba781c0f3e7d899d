"""The REST API, version 1. Views parse and validate input, call the engine, shape JSON."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Blueprint, Response, jsonify, request
from markupsafe import escape

from recommender.errors import InvalidInput, PaperrecError
from recommender.feedback import parse_signal

from .errors import error_response
from .state import engine

api = Blueprint("api", __name__)
T = TypeVar("T")


def query_arg(name: str, parse: Callable[[str], T], expected: str) -> T | None:
    """The query parameter parsed, None when absent; a 400 naming it when it does not parse."""
    raw = request.args.get(name)
    if raw is None:
        return None
    try:
        return parse(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be {expected}, got {raw!r}") from None


def int_arg(name: str, default: int) -> int:
    value = query_arg(name, int, "an integer")
    return default if value is None else value


def bool_arg(name: str) -> bool:
    raw = request.args.get(name, "false").lower()
    if raw not in ("true", "false", "1", "0"):
        raise InvalidInput(f"{name} must be true or false, got {raw!r}")
    return raw in ("true", "1")


def json_object(allowed: set[str]) -> dict[str, Any]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise InvalidInput('the body must be a JSON object, e.g. {"signal": "like"}, sent with '
                           "Content-Type: application/json")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(f"unknown field(s): {', '.join(unknown)}; "
                           f"allowed: {', '.join(sorted(allowed))}")
    return body


@api.get("/healthz")
def healthz() -> Response:
    return jsonify({"status": "ok"})


@api.get("/readyz")
def readyz() -> Response | tuple[Response, int]:
    problems = []
    details: dict[str, Any] = {}
    try:
        index = engine().index.get()
        details.update(index_version=index.version, papers=len(index))
    except PaperrecError as exc:
        problems.append(exc.message)
    try:
        engine().feedback.ping()
    except PaperrecError as exc:
        problems.append(exc.message)
    if problems:
        response, status = error_response(503, "not_ready", "; ".join(problems))
        response.headers["Retry-After"] = "5"
        return response, status
    return jsonify({"status": "ready", **details})


@api.get("/v1/papers/<path:paper_id>/similar")
def similar(paper_id: str) -> Response:
    items = engine().similar(paper_id, int_arg("k", 10))
    return jsonify({"paper_id": paper_id, "items": [i.to_dict() for i in items]})


@api.get("/v1/papers/<path:paper_id>")
def paper(paper_id: str) -> Response:
    found = engine().paper(paper_id).to_dict()
    del found["text"]
    return jsonify(found)


@api.get("/v1/search")
def search() -> Response:
    query = request.args.get("q", "")
    items = engine().search(query, int_arg("k", 10))
    return jsonify({"query": query, "items": [i.to_dict() for i in items]})


@api.put("/v1/users/<user_id>/feedback/<path:paper_id>")
def put_feedback(user_id: str, paper_id: str) -> Response:
    signal = parse_signal(json_object({"signal"}).get("signal"))
    now = time.time()
    replaced = engine().set_feedback(user_id, paper_id, signal, now)
    return jsonify({"user_id": user_id, "paper_id": paper_id, "signal": signal,
                    "at": round(now, 3), "replaced": replaced})


@api.delete("/v1/users/<user_id>/feedback/<path:paper_id>")
def delete_feedback(user_id: str, paper_id: str) -> tuple[str, int]:
    engine().remove_feedback(user_id, paper_id)
    return "", 204


@api.get("/v1/users/<user_id>/feedback")
def get_feedback(user_id: str) -> Response:
    items = engine().user_feedback(user_id)
    return jsonify({"user_id": user_id, "items": [f.to_dict() for f in items]})


@api.get("/v1/users/<user_id>/recommendations")
def recommendations(user_id: str) -> Response:
    reading_list = engine().recommend(
        user_id,
        int_arg("k", 20),
        now=time.time(),
        offset=int_arg("offset", 0),
        diversity=query_arg("diversity", float, "a number"),
        since=query_arg("since", dt.date.fromisoformat, "a date like 2026-01-31"),
        exclude_served=bool_arg("exclude_served"),
    )
    return jsonify(reading_list.to_dict())


@api.put("/v1/users/<user_id>/subscription")
def put_subscription(user_id: str) -> Response:
    body = json_object({"email", "frequency", "max_items"})
    return jsonify(engine().subscribe(user_id, body, time.time()).to_dict())


@api.get("/v1/users/<user_id>/subscription")
def get_subscription(user_id: str) -> Response:
    return jsonify(engine().subscription(user_id).to_dict())


@api.delete("/v1/users/<user_id>/subscription")
def delete_subscription(user_id: str) -> tuple[str, int]:
    engine().unsubscribe(user_id)
    return "", 204


@api.route("/v1/links/<token>", methods=["GET", "POST"])
def follow_link(token: str) -> tuple[str, int, dict[str, str]]:
    """The one-click links of the digest emails (and RFC 8058 one-click unsubscribe POSTs)."""
    try:
        _claim, message = engine().follow_link(token, time.time())
    except PaperrecError as exc:
        return _page("Nothing was recorded", exc.message, exc.status)
    return _page("Done", message, 200)


def _page(heading: str, message: str, status: int) -> tuple[str, int, dict[str, str]]:
    html = (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>paperrec: {escape(heading)}</title>"
        "<body style='font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;"
        "padding:0 1rem;color:#1f2933'>"
        f"<h1 style='font-size:1.4rem'>{escape(heading)}</h1><p>{escape(message)}</p>"
        "<p style='color:#616e7c'>paperrec</p></body></html>"
    )
    return html, status, {"Content-Type": "text/html; charset=utf-8"}


@api.get("/v1/users/<user_id>/export")
def export_user(user_id: str) -> Response:
    return jsonify(engine().export_user(user_id))


@api.delete("/v1/users/<user_id>")
def erase_user(user_id: str) -> tuple[str, int]:
    engine().erase_user(user_id)
    return "", 204

"""The REST API, version 1. Views parse and validate input, call the engine, shape JSON."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from flask import Blueprint, Response, jsonify, request

from recommender.errors import InvalidInput, PaperrecError
from recommender.feedback import parse_signal

from .errors import error_response
from .state import engine

api = Blueprint("api", __name__)


def int_arg(name: str, default: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be an integer, got {raw!r}") from None


def float_arg(name: str) -> float | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a number, got {raw!r}") from None


def date_arg(name: str) -> dt.date | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a date like 2026-01-31, got {raw!r}") from None


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
        diversity=float_arg("diversity"),
        since=date_arg("since"),
        exclude_served=bool_arg("exclude_served"),
    )
    return jsonify(reading_list.to_dict())

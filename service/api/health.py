"""Is the process alive, and can it answer: for load balancers and orchestrators (no key)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from recommender.core.errors import PaperrecError
from recommender.storage.redis_options import redis_errors

from ..access import access
from ..errors import error_response
from ..state import components
from .area import Reply, answers, area, reply

api = area(__name__, tag="health")


class Health(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    status: Literal["ready"]
    index_version: str
    papers: int


@api.get("/healthz", summary="The process is alive.", responses=answers(Health))
@access("open")
def healthz() -> Reply:
    return reply(Health(status="ok"))


@api.get("/readyz", summary="An index is loaded and Redis answers.",
         responses=answers(Ready, 503))
@access("open")
def readyz() -> Reply:
    problems = []
    details: dict[str, Any] = {}
    parts = components()
    try:
        index = parts.index.get()
        details.update(index_version=index.version, papers=len(index))
    except PaperrecError as exc:
        problems.append(exc.message)
    try:
        with redis_errors():
            parts.redis.ping()
    except PaperrecError as exc:
        problems.append(exc.message)
    if problems:
        response, status = error_response(503, "not_ready", "; ".join(problems))
        response.headers["Retry-After"] = "5"
        return response, status
    return reply(Ready(status="ready", **details))

"""A reader's Zotero library, connected: its items are likes, its collections collections,
kept in sync by `paperrec sync-zotero` (and the scheduled jobs) or at once by ``POST .../sync``
(recommender.feedback.zotero)."""

from __future__ import annotations

import time
from typing import Annotated, Literal

from flask import Response, g
from pydantic import Field

from recommender.core.ids import UserId
from recommender.corpus.zotero_api import API_KEY, LIBRARY_ID
from recommender.feedback.zotero import (
    MAX_INCLUDED,
    ZoteroCollection,
    ZoteroState,
    ZoteroSummary,
)
from recommender.feedback.zotero_plan import OBJECT_KEY

from ..state import components
from .area import Reply, answers, area, reply
from .shapes import Answer, Strict, UserPath

api = area(__name__, tag="zotero")

ZoteroKey = Annotated[str, Field(pattern=OBJECT_KEY.pattern, max_length=32, description=(
    "A Zotero collection's key, as `GET /v1/users/{user_id}/zotero/collections` lists it."),
    json_schema_extra={"example": "ABCD2345"})]


class ConnectBody(Strict):
    library_type: Literal["user", "group"] = Field(
        description="`user`: a personal library; `group`: a group library.")
    library_id: str = Field(
        pattern=LIBRARY_ID.pattern, max_length=12, json_schema_extra={"example": "475425"},
        description="The library's number: your userID (zotero.org/settings/keys) or the "
                    "number in the group's URL.")
    api_key: str = Field(
        pattern=API_KEY.pattern, min_length=8, max_length=64,
        json_schema_extra={"writeOnly": True, "example": "P9NiFoyLeZu2bZNvvuQPDWsd"},
        description="A key made at zotero.org/settings/keys with read access to the library. "
                    "Stored encrypted; never answered.")


class IncludeBody(Strict):
    included: list[ZoteroKey] | None = Field(
        max_length=MAX_INCLUDED, description="The collections whose items are likes and "
                                             "which become collections here; null: all.")


class ZoteroOut(Answer):
    user_id: UserId
    connected: bool
    library_type: Literal["user", "group"] | None
    library_id: str | None
    library_version: int | None = Field(description="The library version synced last.")
    last_sync: ZoteroSummary | None = Field(description="What the last sync did.")
    included_collections: list[str] | None = Field(
        description="The Zotero collections included (their keys); null: all.")
    error: str | None = Field(description="Why the last sync failed (a revoked key, a "
                                          "library gone); null once a sync succeeds.")

    @classmethod
    def of(cls, user_id: str, state: ZoteroState) -> ZoteroOut:
        return cls.model_validate({"user_id": user_id, **vars(state)})


class ZoteroCollectionsOut(Answer):
    user_id: UserId
    collections: list[ZoteroCollection] = Field(
        description="The library's collections as last synced, by their path "
                    "(\"Training / Distributed\"), each with whether it is included.")


@api.put("/v1/users/<user_id>/zotero", summary="Connect a Zotero library.",
         responses=answers(ZoteroOut, 403, 502, 503),
         description="Checks the key with Zotero at once (`/keys/current`): 403 "
                     "(`zotero_refused`) naming the problem when Zotero refuses it, it may not "
                     "read that library, or there is no such library; 502 "
                     "when Zotero cannot be reached. The key is stored encrypted and never "
                     "answered. Connecting another library starts its sync afresh (the likes "
                     "the previous one gave stay). `POST .../zotero/sync` syncs at once; "
                     "otherwise the scheduled job does.")
def connect_zotero(path: UserPath, body: ConnectBody) -> Reply:
    zotero = components().zotero
    state = zotero.connect(path.user_id, body.library_type, body.library_id, body.api_key,
                           time.time())
    return reply(ZoteroOut.of(path.user_id, state))


@api.get("/v1/users/<user_id>/zotero", summary="A reader's Zotero connection and last sync.",
         responses=answers(ZoteroOut, 503),
         description="`connected` is false when none is connected. Never the key.")
def get_zotero(path: UserPath) -> Reply:
    return reply(ZoteroOut.of(path.user_id, components().zotero.state(path.user_id)))


@api.delete("/v1/users/<user_id>/zotero",
            summary="Disconnect the Zotero library (its key is forgotten; the likes stay).",
            responses=answers(None, 503, status=204))
def disconnect_zotero(path: UserPath) -> Response:
    components().zotero.disconnect(path.user_id)
    return Response(status=204)


@api.post("/v1/users/<user_id>/zotero/sync", summary="Sync the Zotero library now.",
          responses=answers(ZoteroSummary, 404, 503),
          description="Reads what changed in Zotero since the last sync and applies it at "
                      "once: items become likes (matched to the corpus, or added as this "
                      "reader's papers), items deleted or trashed stop being likes that came "
                      "from Zotero, collections follow. Answers the sync's summary; a "
                      "failure (a revoked key, Zotero down) is its `error`, also kept as the "
                      "connection's. 404 when no library is connected.")
def sync_zotero(path: UserPath) -> Reply:
    summary = components().zotero.sync(path.user_id, time.time())
    if summary.added or summary.matched:
        g.feedback_written = "like"  # counted by service.metrics
    return reply(summary)


@api.get("/v1/users/<user_id>/zotero/collections",
         summary="The Zotero library's collections, and which are included.",
         responses=answers(ZoteroCollectionsOut, 404, 503))
def list_zotero_collections(path: UserPath) -> Reply:
    found = components().zotero.collections(path.user_id)
    return reply(ZoteroCollectionsOut(user_id=path.user_id, collections=found))


@api.put("/v1/users/<user_id>/zotero/collections",
         summary="Choose the Zotero collections to include.",
         responses=answers(ZoteroCollectionsOut, 404, 503),
         description="Only the items of the included collections are likes, and only these "
                     "collections become collections here (null: all). Applied at once from "
                     "the library as last synced: likes of items no longer included are taken "
                     "back (those the reader gave here stay), collections the sync made for "
                     "excluded ones are deleted (their papers stay liked while included "
                     "elsewhere). 404 for a key not in the library as last synced.")
def include_zotero_collections(path: UserPath, body: IncludeBody) -> Reply:
    zotero = components().zotero
    zotero.include_collections(path.user_id, body.included)
    return reply(ZoteroCollectionsOut(user_id=path.user_id,
                                      collections=zotero.collections(path.user_id)))

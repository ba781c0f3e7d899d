"""A reader's collections: named groups of liked papers ("Graph learning", "Federated"), each
with its own list (``GET /v1/users/<u>/recommendations?collection=<id>``), digest section,
feed and library export (recommender.feedback.collections)."""

from __future__ import annotations

import time
from typing import Annotated

from flask import Response, g
from pydantic import BaseModel, Field

from recommender.core.ids import PaperId, UserId
from recommender.feedback.collections import (
    ID_PATTERN,
    MAX_COLLECTIONS,
    MAX_NAME_LENGTH,
    Collection,
)
from recommender.feedback.rules import VALUE_PATTERN

from ..state import components
from .area import Reply, answers, area, reply
from .shapes import Answer, CollectionId, Strict, UserPath

api = area(__name__, tag="collections")

# A letter or digit as the rules' values have one (VALUE_PATTERN), and no control character
# (C0, DEL, C1: what the library refuses) anywhere: explicit ranges, read alike by Python's
# re and ECMA-262.
NO_CONTROLS = "[^\\x00-\\x1f\\x7f-\\x9f]*"
NAME_PATTERN = f"^{NO_CONTROLS}{VALUE_PATTERN.pattern}{NO_CONTROLS}$"
CollectionName = Annotated[str, Field(
    min_length=1, max_length=MAX_NAME_LENGTH,
    description=f"a name with a letter or digit (any script's) and no control character, at "
                f"most {MAX_NAME_LENGTH} characters; its ends are stripped and its spaces "
                "collapsed",
    json_schema_extra={"pattern": NAME_PATTERN, "example": "Graph learning"})]


class UserCollectionPath(BaseModel):
    user_id: UserId
    collection_id: CollectionId


class CollectionPaperPath(BaseModel):
    user_id: UserId
    collection_id: CollectionId
    paper_id: PaperId


class NameBody(Strict):
    name: CollectionName


class MoveBody(Strict):
    paper_id: PaperId
    to: CollectionId = Field(description="The collection the paper goes to.")


class CollectionOut(Answer):
    id: str = Field(pattern=ID_PATTERN)
    name: str


class CollectionsOut(Answer):
    user_id: UserId
    collections: list[Collection] = Field(description=f"Oldest first; at most "
                                                      f"{MAX_COLLECTIONS}.")


class CollectionPapersOut(Answer):
    user_id: UserId
    collection: Collection
    paper_ids: list[PaperId] = Field(description="Its papers, the most recently liked first.")


class CollectedOut(Answer):
    user_id: UserId
    collection_id: str
    paper_id: PaperId
    replaced: bool = Field(description="Whether the like replaced an earlier signal (a "
                                       "dislike, or a like, whose time it renews).")


@api.get("/v1/users/<user_id>/collections", summary="A reader's collections, with sizes.",
         responses=answers(CollectionsOut, 503))
def list_collections(path: UserPath) -> Reply:
    return reply(CollectionsOut(user_id=path.user_id,
                                collections=components().collections.all(path.user_id)))


@api.post("/v1/users/<user_id>/collections", summary="Create a collection.",
          responses=answers(CollectionOut, 409, 503, status=201),
          description=f"An empty collection named `name`. 409 when the reader has a "
                      f"collection of that name (case and accents aside); 400 beyond "
                      f"{MAX_COLLECTIONS} collections.")
def create_collection(path: UserPath, body: NameBody) -> Reply:
    made = components().collections.create(path.user_id, body.name, time.time())
    return reply(CollectionOut(id=made.id, name=made.name), 201)


@api.get("/v1/users/<user_id>/collections/<collection_id>",
         summary="A collection and its papers.", responses=answers(CollectionPapersOut, 404, 503))
def get_collection(path: UserCollectionPath) -> Reply:
    found = components().collections.papers(path.user_id, path.collection_id)
    return reply(CollectionPapersOut(user_id=path.user_id, collection=found.collection,
                                     paper_ids=found.paper_ids))


@api.patch("/v1/users/<user_id>/collections/<collection_id>", summary="Rename a collection.",
           responses=answers(Collection, 404, 409, 503),
           description="409 when another of the reader's collections has that name.")
def rename_collection(path: UserCollectionPath, body: NameBody) -> Reply:
    return reply(components().collections.rename(path.user_id, path.collection_id, body.name))


@api.delete("/v1/users/<user_id>/collections/<collection_id>",
            summary="Delete a collection (its papers stay liked).",
            responses=answers(None, 404, 503, status=204))
def delete_collection(path: UserCollectionPath) -> Response:
    components().collections.delete(path.user_id, path.collection_id)
    return Response(status=204)


@api.put("/v1/users/<user_id>/collections/<collection_id>/papers/<path:paper_id>",
         summary="Put a paper in a collection (it is liked too).",
         responses=answers(CollectedOut, 404, 503),
         description="Likes the paper and puts it in this collection, beside those it is in "
                     "already. Disliking it or taking the like back takes it out of every "
                     "collection.")
def put_collection_paper(path: CollectionPaperPath) -> Reply:
    parts = components()
    paper = parts.recommender.paper(path.paper_id, viewer=path.user_id)
    replaced = parts.collections.put(path.user_id, path.collection_id, paper.id, time.time())
    g.feedback_written = "like"  # counted by service.metrics
    return reply(CollectedOut(user_id=path.user_id, collection_id=path.collection_id,
                              paper_id=paper.id, replaced=replaced))


@api.delete("/v1/users/<user_id>/collections/<collection_id>/papers/<path:paper_id>",
            summary="Take a paper out of a collection (it stays liked).",
            responses=answers(None, 404, 503, status=204))
def remove_collection_paper(path: CollectionPaperPath) -> Response:
    parts = components()
    stored = parts.corpus.resolve(path.paper_id) or path.paper_id
    parts.collections.remove(path.user_id, path.collection_id, stored)
    return Response(status=204)


@api.post("/v1/users/<user_id>/collections/<collection_id>/move",
          summary="Move a paper from this collection to another.",
          responses=answers(CollectionsOut, 404, 503),
          description="404 when either collection is missing or the paper is not in this "
                      "one. Answers the reader's collections with their new sizes.")
def move_collection_paper(path: UserCollectionPath, body: MoveBody) -> Reply:
    parts = components()
    stored = parts.corpus.resolve(body.paper_id) or body.paper_id
    parts.collections.move(path.user_id, path.collection_id, body.to, stored)
    return reply(CollectionsOut(user_id=path.user_id,
                                collections=parts.collections.all(path.user_id)))

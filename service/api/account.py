"""Everything stored about a user: export it, or erase it (admin keys only)."""

from __future__ import annotations

from flask import Response
from pydantic import Field

from recommender.core.ids import PaperId, UserId
from recommender.digest.feed_tokens import FeedUrls
from recommender.digest.subscriptions import DigestRecord, Subscription
from recommender.feedback.collections import CollectionExport
from recommender.feedback.rules import Rule
from recommender.feedback.store import Feedback
from recommender.feedback.user_data import Served, UserExport
from recommender.feedback.zotero import ZoteroState

from ..access import access
from ..state import components
from .area import Reply, answers, area, reply
from .shapes import Answer, UserPath

api = area(__name__, tag="your data")


class ExportOut(Answer):
    user_id: UserId
    feedback: list[Feedback]
    served: list[Served] = Field(description="The papers served to the user, with when each "
                                             "was first served.")
    set_aside: list[Served] = Field(description="The papers the user set aside (\"Not now\"), "
                                                "with when.")
    subscription: Subscription | None
    digests: list[DigestRecord]
    rules: list[Rule]
    collections: list[CollectionExport]
    feed: FeedUrls | None = Field(description="The private feed URLs, when issued.")
    uploads: list[PaperId] = Field(description="Papers the user's imports added that are "
                                               "still theirs alone (not verified yet).")
    zotero: ZoteroState | None = Field(description="The Zotero library connected (never its "
                                                   "key), when one is.")

    @classmethod
    def of(cls, export: UserExport) -> ExportOut:
        return cls.model_validate({"user_id": export.user_id, "feedback": export.feedback,
                                   "served": export.served, "set_aside": export.set_aside,
                                   **export.sections})


@api.get("/v1/users/<user_id>/export", summary="Everything stored about a user (admin).",
         responses=answers(ExportOut, 503))
@access("admin")
def export_user(path: UserPath) -> Reply:
    return reply(ExportOut.of(components().user_data.export(path.user_id)))


@api.delete("/v1/users/<user_id>", summary="Erase everything stored about a user (admin).",
            responses=answers(None, 503, status=204))
@access("admin")
def erase_user(path: UserPath) -> Response:
    components().user_data.erase(path.user_id)
    return Response(status=204)

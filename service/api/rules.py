"""A user's follow and mute rules: an author's, a keyword's or a category's papers always first,
or never."""

from __future__ import annotations

import time
from typing import Annotated

from flask import Response
from pydantic import BaseModel, Field

from recommender.core.errors import NotFound
from recommender.core.ids import UserId
from recommender.feedback.rules import MAX_RULES, MAX_VALUE_LENGTH, VALUE_PATTERN, Rule
from recommender.ranking.reader_rules import FOLLOW_WINDOW_DAYS

from ..state import components
from .area import Reply, answers, area, reply
from .shapes import Answer, RuleAction, RuleKind, Strict, UserPath

api = area(__name__, tag="rules")

# "A letter or digit" as the library checks it (its 400 says so in its words), stated in the
# document in Python's dialect, where \w is Unicode's letters and digits (and _): an engine
# whose \w is ASCII's reads it stricter than the server is ("日本" passes), never looser.
RuleValue = Annotated[str, Field(
    min_length=1, max_length=MAX_VALUE_LENGTH,
    description=f"an author's name, a keyword (a word or a phrase) or a category (arXiv's "
                f"cs.LG) with a letter or digit "
                f"(any script's), at most {MAX_VALUE_LENGTH} characters",
    json_schema_extra={"pattern": VALUE_PATTERN.pattern, "example": "Yoshua Bengio"})]


class RulePath(BaseModel):
    user_id: UserId
    action: RuleAction = Field(description="follow: always list its new papers; mute: never "
                                           "show its papers")
    kind: RuleKind = Field(description="an author's name, a keyword or a category")


class RuleBody(Strict):
    value: RuleValue


class RuleQuery(Strict):
    value: RuleValue


class RulesOut(Answer):
    user_id: UserId
    rules: list[Rule] = Field(description=f"Oldest first; at most {MAX_RULES}.")


class RuleChangeOut(Answer):
    user_id: UserId
    action: RuleAction
    kind: RuleKind
    value: str = Field(description="As given, with its ends stripped and its spaces collapsed.")
    created_at: float
    created: bool = Field(description="Whether the user had no rule on this author, keyword "
                                        "or category.")
    replaced: bool = Field(description="Whether it replaced the other action on it (a follow "
                                       "replaces a mute, and a mute a follow).")


@api.get("/v1/users/<user_id>/rules", summary="A user's follow and mute rules.",
         responses=answers(RulesOut, 503))
def get_rules(path: UserPath) -> Reply:
    return reply(RulesOut(user_id=path.user_id, rules=components().rules.get(path.user_id)))


@api.put("/v1/users/<user_id>/rules/<action>/<kind>",
         summary="Follow or mute an author, a keyword or a category (the same rule again "
                 "changes nothing).",
         responses=answers(RuleChangeOut, 503),
         description="Follow: the author's, keyword's or category's new papers always come "
                     "first in "
                     "the reading lists and digests, marked `followed_rule` (new: dated on or "
                     f"after the list's `since`, or without one within {FOLLOW_WINDOW_DAYS} "
                     "days). Mute: its papers are never shown. An author matches by name "
                     "(case and accents aside; \"Last, First\" reads as \"First Last\"), a "
                     "keyword as whole words in the title or abstract, a category (arXiv's "
                     "`cs.LG`) as one of the paper's categories (case aside). One author, "
                     "keyword or category "
                     "has one rule: following a muted one replaces the mute. 400 beyond the "
                     "most rules a user may have.")
def put_rule(path: RulePath, body: RuleBody) -> Reply:
    change = components().rules.put(path.user_id, path.action, path.kind, body.value,
                                    time.time())
    return reply(RuleChangeOut(user_id=path.user_id, action=change.rule.action,
                               kind=change.rule.kind, value=change.rule.value,
                               created_at=change.rule.created_at, created=change.created,
                               replaced=change.replaced))


@api.delete("/v1/users/<user_id>/rules/<action>/<kind>",
            summary="Delete a rule (the value in the query: `?value=Yoshua+Bengio`).",
            responses=answers(None, 404, 503, status=204))
def delete_rule(path: RulePath, query: RuleQuery) -> Response:
    if not components().rules.remove(path.user_id, path.action, path.kind, query.value):
        raise NotFound(f"user {path.user_id!r} has no rule to {path.action} the {path.kind} "
                       f"{query.value!r}")
    return Response(status=204)

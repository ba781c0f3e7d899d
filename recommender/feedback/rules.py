"""RuleStore: a reader's rules, in Redis. Follow an author, a keyword or a category (their new
papers always reach the list, marked as such) or mute one (its papers are never shown).

A rule is (action, kind, value): action ``follow`` or ``mute``, kind ``author``, ``keyword``
or ``category`` (arXiv's ``cs.LG``, matched against a paper's categories). The value is kept
as the reader wrote it, ends stripped and spaces collapsed (its display form), and compared
in its normalised form (``recommender.core.matching``: accents and case folded; "Last,
First" read as "First Last"). One author, keyword or category has one rule: following a
muted author replaces the mute, as a like replaces a dislike. Putting the same rule again
changes nothing (it keeps its ``created_at``).

One hash per user (``RedisKeys.rules``) maps "<kind>:<normalised value>" to the rule as JSON;
a Lua script checks the cap (``MAX_RULES``) and writes in one step. The rules are part of the
user's export (``export_user``) and go with the erasure of their keys (``RedisKeys.user_keys``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

import redis
from pydantic import Field

from recommender.core.errors import InvalidInput
from recommender.core.matching import (
    author_key,
    author_matches,
    category_key,
    category_matches,
    display_form,
    keyword_matches,
    words,
)
from recommender.core.papers import Paper
from recommender.corpus.store import CorpusStore
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import redis_errors
from recommender.storage.redis_writes import UserWrites

Action = Literal["follow", "mute"]
RuleKind = Literal["author", "keyword", "category"]
ACTIONS: tuple[Action, ...] = ("follow", "mute")
RULE_KINDS: tuple[RuleKind, ...] = ("author", "keyword", "category")
MAX_VALUE_LENGTH = 200  # characters of a value, as given
MAX_RULES = 100  # rules per user, follows and mutes together
# A value needs a letter or digit somewhere: an ASCII one, or any character of the Basic
# Multilingual Plane from Latin-1's letters up (surrogates and private use left out). Written
# as explicit ranges, not \w, because the API declares this pattern and JSON Schema's ECMA-262
# dialect reads \w as ASCII only: the server and every client must agree on what matches.
VALUE_PATTERN = re.compile(r"[0-9A-Za-z\u00c0-\ud7ff\uf900-\uffff]")

# KEYS: the user's rules hash.  ARGV: field, rule JSON, action, MAX_RULES.
_PUT_RULE = """
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  if cjson.decode(old)['action'] == ARGV[3] then return {'same', old} end
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return {'replaced', ARGV[2]}
end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return {'full', ''} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {'created', ARGV[2]}
"""
# KEYS: the user's rules hash.  ARGV: field, action.  1 when a rule was removed.
_REMOVE_RULE = """
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old and cjson.decode(old)['action'] == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
return 0
"""


@dataclass(frozen=True)
class Rule:
    action: Action
    kind: RuleKind
    value: Annotated[str, Field(description="As given, with its ends stripped and its spaces "
                                            "collapsed.")]
    created_at: float  # unix time

    @property
    def label(self) -> str:
        """The rule in words, as reasons show it: "author: Yoshua Bengio"."""
        return f"{self.kind}: {self.value}"

    def matches(self, paper: Paper) -> bool:
        if self.kind == "author":
            return author_matches(paper, author_key(self.value))
        if self.kind == "category":
            return category_matches(paper, category_key(self.value))
        return keyword_matches(paper, words(self.value))

    def papers(self, corpus: CorpusStore,
               since_day: float | None = None) -> list[tuple[str, float]]:
        """(id, day or NaN) of every paper in the corpus the rule matches (an index lookup),
        only those dated on or after ``since_day`` when it is given."""
        if self.kind == "author":
            return corpus.papers_by_author(author_key(self.value), since_day)
        if self.kind == "category":
            return corpus.papers_in_category(category_key(self.value), since_day)
        return corpus.papers_with_words(words(self.value), since_day)


@dataclass(frozen=True)
class RuleChange:
    rule: Rule  # the rule as stored now
    created: bool  # there was no rule on this author, keyword or category
    replaced: bool  # it replaced the other action on the same one


def parse_action(value: object) -> Action:
    for action in ACTIONS:
        if value == action:
            return action
    raise InvalidInput(f'a rule\'s action must be "follow" or "mute", got {value!r}')


def parse_kind(value: object) -> RuleKind:
    for kind in RULE_KINDS:
        if value == kind:
            return kind
    raise InvalidInput(f'a rule\'s kind must be "author", "keyword" or "category", '
                       f'got {value!r}')


def rule_value(kind: RuleKind, value: str) -> tuple[str, str]:
    """(display form, normalised form) of a value, or ``InvalidInput`` saying what is wrong."""
    if not VALUE_PATTERN.search(value):
        raise InvalidInput(f"the {kind} of a rule must have a letter or digit, got {value!r}")
    if len(value) > MAX_VALUE_LENGTH:
        raise InvalidInput(f"the {kind} of a rule must be at most {MAX_VALUE_LENGTH} "
                           f"characters, got {len(value)}")
    shown = display_form(value)
    if kind == "author":
        key = author_key(shown)
    elif kind == "category":
        key = category_key(shown)
    else:
        key = " ".join(words(shown))
    if not words(key):  # e.g. only "×" or "÷": in the pattern's range, yet no word to match
        raise InvalidInput(f"the {kind} of a rule must have a word to match, got {value!r}")
    return shown, key


def first_match(rules: list[Rule], action: Action, paper: Paper) -> Rule | None:
    """The oldest of ``rules`` with this action that matches the paper."""
    return next((r for r in rules if r.action == action and r.matches(paper)), None)


class RuleStore:
    def __init__(self, client: redis.Redis, keys: RedisKeys,
                 writes: UserWrites | None = None) -> None:
        self._redis = client
        self._keys = keys
        self._writes = writes or UserWrites(client)
        self._put = self._writes.register(_PUT_RULE)
        self._remove = self._writes.register(_REMOVE_RULE)

    def put(self, user_id: str, action: Action, kind: RuleKind, value: str,
            now: float) -> RuleChange:
        """Follow or mute an author, keyword or category; the same rule again changes
        nothing."""
        action, kind = parse_action(action), parse_kind(kind)
        shown, key = rule_value(kind, value)
        record = json.dumps({"action": action, "value": shown, "created_at": round(now, 3)})
        outcome, stored = cast(list[str], self._writes.run(
            self._put, [self._keys.rules(user_id)], [f"{kind}:{key}", record, action, MAX_RULES]))
        if outcome == "full":
            raise InvalidInput(f"user {user_id!r} already has {MAX_RULES} rules, the most "
                               "allowed: delete one before adding another")
        return RuleChange(_rule(kind, stored), outcome == "created", outcome == "replaced")

    def remove(self, user_id: str, action: Action, kind: RuleKind, value: str) -> bool:
        """Delete the rule; False when the user has no such rule."""
        action, kind = parse_action(action), parse_kind(kind)
        _, key = rule_value(kind, value)
        removed = self._writes.run(self._remove, [self._keys.rules(user_id)],
                                   [f"{kind}:{key}", action])
        return bool(removed)

    def get(self, user_id: str) -> list[Rule]:
        """The user's rules, oldest first."""
        with redis_errors():
            return parse_rules(cast(dict[str, str],
                                    self._redis.hgetall(self._keys.rules(user_id))))

    def muting(self, user_id: str, paper: Paper) -> Rule | None:
        """The user's oldest mute rule that matches the paper, or None: why a paper is never
        on their list ("muted by your rule author: X", ``Rule.label``)."""
        return first_match(self.get(user_id), "mute", paper)

    def following(self, user_id: str, paper: Paper) -> Rule | None:
        """The user's oldest follow rule that matches the paper, or None. (A followed paper is
        put first only when it is new: dated within the list's ``since``.)"""
        return first_match(self.get(user_id), "follow", paper)

    def export_user(self, user_id: str) -> dict[str, Any]:
        """The user's rules (their part of an export)."""
        return {"rules": self.get(user_id)}


def parse_rules(raw: dict[str, str]) -> list[Rule]:
    """The rules of one user's rules hash (``RedisKeys.rules``), oldest first."""
    rules = [_rule(parse_kind(field.partition(":")[0]), value) for field, value in raw.items()]
    return sorted(rules, key=lambda r: (r.created_at, r.kind, r.value))


def _rule(kind: RuleKind, stored: str) -> Rule:
    data = json.loads(stored)
    return Rule(parse_action(data["action"]), kind, data["value"], float(data["created_at"]))

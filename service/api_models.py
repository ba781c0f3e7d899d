"""The request and response models of the REST API: they validate every call and they are
what /openapi.json documents. Limits come from the library, so each rule lives in one place.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from recommender.core.ids import MAX_ID_LENGTH, PAPER_ID_PATTERN, USER_ID_PATTERN
from recommender.digest.subscriptions import (
    DEFAULT_MIN_PROBABILITY,
    EMAIL_PATTERN,
    MAX_ITEMS_LIMIT,
)
from recommender.feedback.rules import MAX_RULES, MAX_VALUE_LENGTH

MAX_K = 200  # items in one list, search or similar-papers answer
MAX_OFFSET = 1000  # how deep a reading list can be paged

UserId = Annotated[str, Field(
    pattern=USER_ID_PATTERN.pattern, max_length=MAX_ID_LENGTH,
    description=f"1 to {MAX_ID_LENGTH} characters of letters, digits and . _ @ + -, "
                "starting with a letter or digit",
    examples=["ada"])]
PaperId = Annotated[str, Field(
    pattern=PAPER_ID_PATTERN.pattern, max_length=MAX_ID_LENGTH,
    description=f"1 to {MAX_ID_LENGTH} characters of letters, digits and . _ : / -, "
                "starting with a letter or digit (old arXiv ids carry a slash)",
    examples=["pl-156475ca5364802b"])]
LinkToken = Annotated[str, Field(description="A signed token from a digest email.")]
FeedToken = Annotated[str, Field(description="The signed token of a private feed URL "
                                             "(`POST /v1/users/{user_id}/feed` issues it).")]
K = Annotated[int, Field(ge=1, le=MAX_K, description=f"How many items, 1 to {MAX_K}.")]
Signal = Literal["like", "dislike"]
RuleAction = Literal["follow", "mute"]
RuleKind = Literal["author", "keyword"]
# No `pattern` for "a letter or digit": regex dialects disagree on which characters are
# ones (Python's \w takes "¾", JSON Schema validators' engines do not), so the document
# would promise what the server does not check. The library checks it (a 400 that says so).
RuleValue = Annotated[str, Field(
    min_length=1, max_length=MAX_VALUE_LENGTH,
    description=f"an author's name or a keyword (a word or a phrase) with a letter or digit, "
                f"at most {MAX_VALUE_LENGTH} characters",
    examples=["Yoshua Bengio"])]


def _json_integer(value: Any) -> Any:
    """JSON Schema's integer: 3 or 3.0, but not "3" or true."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ValueError("should be a whole number")
    return int(value)


def _json_number(value: Any) -> Any:
    """JSON Schema's number: 0.25 or 1, but not "0.25" or false."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("should be a number")
    return float(value)


def _iso_date(value: Any) -> Any:
    try:
        return dt.date.fromisoformat(value) if isinstance(value, str) else value
    except ValueError:
        raise ValueError("should be a date like 2026-01-31") from None


JsonInteger = Annotated[int, BeforeValidator(_json_integer)]
JsonNumber = Annotated[float, BeforeValidator(_json_number)]
IsoDate = Annotated[dt.date, BeforeValidator(_iso_date)]
PATH_PARAMETERS: dict[str, Any] = {
    "user_id": UserId, "paper_id": PaperId, "token": LinkToken, "feed_token": FeedToken,
    "action": Annotated[RuleAction, Field(description="follow: always list its new papers; "
                                                      "mute: never show its papers")],
    "kind": Annotated[RuleKind, Field(description="an author's name or a keyword")],
}


class Strict(BaseModel):
    """Unknown fields are refused (a 400 that names them), not silently ignored."""

    model_config = ConfigDict(extra="forbid")


# --- requests ---------------------------------------------------------------------------
class KQuery(Strict):
    k: K = 10


class SearchQuery(Strict):
    # One character that no regex dialect (JSON Schema's, pydantic's, Python's strip) counts
    # as space or control: the text is not blank for any of them.
    q: str = Field(min_length=1, max_length=1000, pattern=r"[^\s\x00-\x20\x7f-\xa0\ufeff]",
                   description="a search text with a visible character, at most 1000 "
                               "characters",
                   examples=["federated learning with noisy labels"])
    k: K = 10


# The list's settings, shared by the list and why-not (which answers about that list).
Since = Annotated[IsoDate | None, Field(description="Only papers published on or after.")]
ExcludeServed = Annotated[bool, Field(description=(
    "Leave out papers this user was already shown (by default they are pushed down)."))]
MinProbability = Annotated[float, Field(ge=0, le=1, description=(
    "Leave out papers less likely than this to be worth reading (the list may then be "
    "shorter than k; new papers of followed authors and keywords always stay, and a "
    "list for a user without likes is not cut)."))]


class RecommendationsQuery(Strict):
    k: K = 20
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Skip this many (paging).")
    diversity: float | None = Field(None, ge=0, le=1, description=(
        "0 ranks by score alone, 1 spreads the list across the user's interests (MMR)."))
    since: Since = None
    exclude_served: ExcludeServed = False
    min_probability: MinProbability = 0.0


class WhyNotQuery(Strict):
    k: Annotated[int, Field(ge=1, le=MAX_K, description=(
        f"The length of the list you look at, 1 to {MAX_K}."))] = 20
    since: Since = None
    exclude_served: ExcludeServed = False
    min_probability: MinProbability = 0.0


class FeedbackBody(Strict):
    signal: Signal


class RuleBody(Strict):
    model_config = ConfigDict(extra="forbid")
    value: RuleValue


class RuleQuery(Strict):
    model_config = ConfigDict(extra="forbid")
    value: RuleValue


class SubscriptionBody(Strict):
    email: str = Field(pattern=EMAIL_PATTERN.pattern, max_length=254,
                       description="an address like ada@example.org",
                       examples=["ada@example.org"])
    frequency: Literal["daily", "weekly"] = "weekly"
    max_items: JsonInteger = Field(10, ge=1, le=MAX_ITEMS_LIMIT)
    min_probability: JsonNumber = Field(DEFAULT_MIN_PROBABILITY, ge=0, le=1, description=(
        "Send only papers at least this likely to be worth reading; a period with none "
        "sends no email."))


# --- responses --------------------------------------------------------------------------
class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorDetail


class Health(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    status: Literal["ready"]
    index_version: str
    papers: int


class SimilarToLiked(BaseModel):
    kind: Literal["similar_to_liked"]
    paper_id: PaperId = Field(description="The liked paper it is closest to.")
    similarity: float


class SimilarReaders(BaseModel):
    kind: Literal["similar_readers"]
    weight: float = Field(description="What collaborative filtering adds to the score.")


class Popular(BaseModel):
    kind: Literal["popular"]
    likes: int


class FollowedRule(BaseModel):
    kind: Literal["followed_rule"]
    rule: str = Field(description='The follow rule that put it first, e.g. "author: Yoshua '
                                  'Bengio".')


Reason = Annotated[SimilarToLiked | SimilarReaders | Popular | FollowedRule,
                   Field(discriminator="kind")]


class Item(BaseModel):
    paper_id: PaperId
    title: str
    score: float
    reason: str = Field(description="Why, in words.")
    reasons: list[Reason] = Field(description="Why, as data, strongest first.")
    because: list[PaperId] = Field(description="The liked papers behind it.")
    probability: float | None = Field(None, ge=0, le=1, description=(
        "How likely this user finds it worth reading (calibrated on held-out likes); set on "
        "reading-list items, null on search results and similar papers."))


class PaperOut(BaseModel):
    id: PaperId
    title: str
    abstract: str
    authors: list[str]
    year: int | None
    date: str | None
    url: str | None
    code_urls: list[str]
    categories: list[str]


class SimilarOut(BaseModel):
    paper_id: PaperId
    items: list[Item]


class SearchOut(BaseModel):
    query: str
    items: list[Item]


class FeedbackOut(BaseModel):
    user_id: UserId
    paper_id: PaperId
    signal: Signal
    at: float
    replaced: bool = Field(description="Whether it replaced an earlier signal on this paper.")


class FeedbackEntry(BaseModel):
    paper_id: PaperId
    signal: Signal
    at: float


class FeedbackListOut(BaseModel):
    user_id: UserId
    items: list[FeedbackEntry]


class ReadingListOut(BaseModel):
    user_id: UserId
    personalized: bool = Field(description="False: the user has no usable likes yet, so the "
                                           "list is what is popular and broad.")
    index_version: str
    model_version: str | None
    items: list[Item]


class ScoreParts(BaseModel):
    content: float = Field(description="Closeness to what the user liked.")
    popularity: float = Field(description="What its likes add (mostly for new users).")
    collaborative: float = Field(description="What readers with similar taste add.")
    dislike_penalty: float = Field(description="Subtracted: closeness to a disliked paper.")
    served_penalty: float = Field(description="Subtracted: it was served before.")
    scale: float = Field(description="The spread of the user's scores; the probability is "
                                     "calibrated on score / scale.")


class Liked(BaseModel):
    kind: Literal["liked"]
    detail: str


class Disliked(BaseModel):
    kind: Literal["disliked"]
    detail: str


class Muted(BaseModel):
    kind: Literal["muted"]
    detail: str
    rule: str = Field(description='The mute rule, e.g. "author: Jürgen Müller".')


class ServedExcluded(BaseModel):
    kind: Literal["served_excluded"]
    detail: str


class BeforeSince(BaseModel):
    kind: Literal["before_since"]
    detail: str
    date: str | None = Field(description="The paper's date; null when it has none.")
    since: str


class BelowMinProbability(BaseModel):
    kind: Literal["below_min_probability"]
    detail: str
    probability: float
    min_probability: float


class CloseToDisliked(BaseModel):
    kind: Literal["close_to_disliked"]
    detail: str
    paper_id: PaperId = Field(description="The disliked paper it is closest to.")
    similarity: float
    penalty: float = Field(description="What that takes off its score.")
    rank_without_penalty: int = Field(description="Where it would rank without it.")


class Outranked(BaseModel):
    kind: Literal["outranked"]
    detail: str
    rank: int
    k: int
    kth_score: float = Field(description="The score of the list's k-th item.")
    score: float
    gap: float = Field(description="How much more it would need to be k-th.")


Blocker = Annotated[Liked | Disliked | Muted | ServedExcluded | BeforeSince
                    | BelowMinProbability | CloseToDisliked | Outranked,
                    Field(discriminator="kind")]


class WhyNotOut(Item):
    """The paper as a list item (its score, probability and reasons), then where it would
    stand and what keeps it out."""

    user_id: UserId
    k: int = Field(description="The list length asked about.")
    rank: int = Field(ge=1, description=(
        "Where it would stand on the list with these settings (ordered by score) if nothing "
        "kept it out: after the papers a follow rule puts first, 1 + the papers the list may "
        "show that score higher."))
    rank_is_estimate: bool = Field(description=(
        "True over an approximate (HNSW) index: counted among the candidates of a deep list."))
    in_list: bool = Field(description="Whether it is among the k items the user gets now.")
    parts: ScoreParts
    blockers: list[Blocker] = Field(description=(
        "What keeps it out, in words (detail) and as data; empty when it is on the list."))
    summary: str = Field(description="The answer in one or two sentences.")
    personalized: bool


class SubscriptionOut(BaseModel):
    user_id: UserId
    email: str
    frequency: Literal["daily", "weekly"]
    max_items: int
    min_probability: float
    created_at: float


class Served(BaseModel):
    paper_id: PaperId
    at: float


class DigestRecord(BaseModel):
    period: str
    at: float
    message_id: str


class RuleOut(BaseModel):
    action: RuleAction
    kind: RuleKind
    value: str = Field(description="As given, with its ends stripped and its spaces collapsed.")
    created_at: float


class RuleChangeOut(BaseModel):
    user_id: UserId
    action: RuleAction
    kind: RuleKind
    value: str = Field(description="As given, with its ends stripped and its spaces collapsed.")
    created_at: float
    created: bool = Field(description="Whether the user had no rule on this author or keyword.")
    replaced: bool = Field(description="Whether it replaced the other action on it (a follow "
                                       "replaces a mute, and a mute a follow).")


class RulesOut(BaseModel):
    user_id: UserId
    rules: list[RuleOut] = Field(description=f"Oldest first; at most {MAX_RULES}.")


class FeedOut(BaseModel):
    user_id: UserId
    atom: str = Field(description="The Atom feed's private URL (no API key needed: the URL "
                                  "is the key; keep it to yourself).")
    json_feed: str = Field(alias="json", description="The JSON Feed 1.1 version's private URL.")
    issued_at: float = Field(description="Unix time it was issued; URLs issued before it no "
                                         "longer work.")

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)


class ExportOut(BaseModel):
    user_id: UserId
    feedback: list[FeedbackEntry]
    served: list[Served]
    subscription: SubscriptionOut | None
    digests: list[DigestRecord]
    rules: list[RuleOut]
    feed: FeedOut | None = Field(description="The private feed URLs, when issued.")


# --- a researcher's library (service/library_api.py) ------------------------------------------
class LibraryQuery(Strict):
    format: Literal["bibtex", "ris", "csl-json"] = Field(
        "bibtex", description="bibtex (default), ris or csl-json")


class ImportedEntryOut(BaseModel):
    entry: str = Field(description="The entry's key, else its title (or the id on its line).")
    index: int = Field(description="Its position among the file's entries, from 1.")
    line: int | None = Field(description="The line it starts on (BibTeX, RIS, id lists).")
    paper_id: PaperId | None = Field(description="The paper liked (null when rejected).")
    reason: str | None = Field(description="Why it was rejected.")


class ImportOut(BaseModel):
    user_id: UserId
    format: Literal["bibtex", "ris", "csl-json", "ids"]
    matched: list[ImportedEntryOut] = Field(description="In the corpus already; now liked.")
    added: list[ImportedEntryOut] = Field(description="Added to the corpus and liked.")
    already_liked: list[ImportedEntryOut]
    rejected: list[ImportedEntryOut]
    liked: int = Field(description="The user's likes after the import.")

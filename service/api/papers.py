"""Papers: one paper, the papers close to it in content, and search (words and meaning)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from recommender.core.ids import PaperId, UserId
from recommender.ranking.explain import Recommendation
from recommender.ranking.search import SearchHit

from ..state import components
from .area import Reply, answers, area, reply
from .shapes import Answer, K, PaperPath, Strict

api = area(__name__, tag="papers")


READER = ("as this reader sees it: a paper their library import added is theirs alone until "
          "it is verified (from arXiv, OpenReview, an operator's ingest or review)")


class ViewerQuery(Strict):
    user_id: UserId | None = Field(None, description=READER)


class SearchQuery(Strict):
    # One character that no regex dialect (JSON Schema's, pydantic's, Python's strip) counts
    # as space or control: the text is not blank for any of them.
    q: str = Field(min_length=1, max_length=1000, pattern=r"[^\s\x00-\x20\x7f-\xa0\ufeff]",
                   description="a search text with a visible character, at most 1000 "
                               "characters: words, \"quoted phrases\", au:name, ti:word, "
                               "year:2020 or year:2019-2021 (docs: guide/search)",
                   json_schema_extra={"example": "federated learning with noisy labels"})
    k: K = 10
    user_id: UserId | None = Field(None, description=(
        "search for this reader: their uploads not verified yet are searched too"))


class SimilarQuery(ViewerQuery):
    k: K = 10


class PaperOut(BaseModel):
    """A paper as the API shows it (recommender.core.papers.Paper, without what is internal)."""

    id: PaperId
    title: str
    abstract: str
    authors: list[str]
    year: int | None
    date: str | None
    url: str | None
    code_urls: list[str]
    categories: list[str]


class SimilarPapers(Answer):
    paper_id: PaperId
    items: list[Recommendation]


class SearchResults(Answer):
    query: str
    items: list[SearchHit]


@api.get("/v1/papers/<path:paper_id>/similar", summary="Papers close in content.",
         responses=answers(SimilarPapers, 404, 503))
def similar(path: PaperPath, query: SimilarQuery) -> Reply:
    items = components().recommender.similar(path.paper_id, query.k, viewer=query.user_id)
    return reply(SimilarPapers(paper_id=path.paper_id, items=items))


@api.get("/v1/papers/<path:paper_id>", summary="One paper.", responses=answers(PaperOut, 404))
def paper(path: PaperPath, query: ViewerQuery) -> Reply:
    found = components().recommender.paper(path.paper_id, viewer=query.user_id)
    return reply(PaperOut.model_validate(found, from_attributes=True))


@api.get("/v1/search", summary="Search titles, abstracts and authors, by words and meaning.",
         responses=answers(SearchResults, 503))
def search(query: SearchQuery) -> Reply:
    items = components().recommender.search(query.q, query.k, viewer=query.user_id)
    return reply(SearchResults(query=query.q.strip(), items=items))

"""citeulike-a (DESIGN.md: the public benchmark of scientific-article recommendation) as the
benchmarks read it: a split as the evaluation's ``Dataset``, its papers, samples of their
texts, and their vectors through an application's embedding cache."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchmarks.harness import CITEULIKE
from recommender import wiring
from recommender.core.papers import Paper
from recommender.corpus.formats import read_papers
from recommender.evaluation.dataset import Dataset, load_dataset, paper_vectors

PAPERS = CITEULIKE / "papers.jsonl"
INTERACTIONS = CITEULIKE / "interactions.tsv"


def split(name: str) -> Dataset:
    """The published split ``name`` (P1, P10) over all papers."""
    folder = CITEULIKE / "splits" / name
    return load_dataset(PAPERS, folder / "train.tsv", folder / "test.tsv",
                        on_problem=lambda _: None)


def papers() -> list[Paper]:
    return [p for p in read_papers(PAPERS) if isinstance(p, Paper)]


def texts(limit: int, seed: int, abstracts: bool = True) -> list[str]:
    """Title + abstract of a fixed random sample of the papers that have an abstract (else of
    all papers, mostly titles alone, as the corpus is); ``limit`` 0: all of them."""
    found = [p.text for p in papers() if p.abstract or not abstracts]
    if limit and limit < len(found):
        rows = np.sort(np.random.default_rng(seed).choice(len(found), limit, replace=False))
        found = [found[r] for r in rows]
    return found


def vectors(app: wiring.Paperrec, chosen: Sequence[Paper],
            progress: bool = True) -> tuple[np.ndarray, int]:
    """The papers' embeddings by the application's model, through its embedding cache (only
    text never seen is embedded), and how many were new."""
    return paper_vectors(chosen, app.embedder, app.embedding_cache, progress)

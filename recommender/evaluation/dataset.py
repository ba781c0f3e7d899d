"""Dataset: papers and train/test likes read from files (JSONL/CSV papers, user<TAB>paper likes)."""


from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from recommender.core.errors import InvalidInput
from recommender.core.papers import Paper, Rejection
from recommender.corpus.formats import read_papers
from recommender.embedding.cache import EmbeddingCache, cached_vectors
from recommender.embedding.encoders import TextEncoder


@dataclass
class Dataset:
    """Papers in file order (a paper's row is its position) and each user's liked rows."""

    papers: list[Paper]
    users: list[str]  # everyone named in the train or test file
    train: list[np.ndarray]  # per user: sorted paper rows liked in training
    test: list[np.ndarray]  # per user: sorted held-out rows, none of them in ``train``
    rejected_papers: int = 0
    skipped_interactions: int = 0  # malformed lines and lines naming unknown papers
    test_in_train: int = 0  # test likes dropped because the user's training set has them
    # The new-papers protocol (``with_new_papers``): rows without any training like, sorted.
    new_rows: np.ndarray | None = None
    new_papers_fraction: float | None = None
    moved_to_test: int = 0  # training likes of the new papers, moved to the test set

    @cached_property
    def paper_ids(self) -> list[str]:
        return [paper.id for paper in self.papers]

    @cached_property
    def like_counts(self) -> np.ndarray:
        """Training likes per paper row."""
        rows = np.concatenate([np.zeros(0, np.int64), *self.train])
        return np.bincount(rows, minlength=len(self.papers))

    def training_likes(self) -> dict[str, list[str]]:
        """User -> liked paper ids, for users with training likes (what CF models fit on)."""
        ids = self.paper_ids
        return {user: [ids[r] for r in rows]
                for user, rows in zip(self.users, self.train, strict=True) if len(rows)}

    def summary(self) -> dict[str, int | float | None]:
        return {
            "papers": len(self.papers),
            "users": len(self.users),
            "users_with_test": sum(1 for rows in self.test if len(rows)),
            "train_likes": sum(len(rows) for rows in self.train),
            "test_likes": sum(len(rows) for rows in self.test),
            "rejected_papers": self.rejected_papers,
            "skipped_interactions": self.skipped_interactions,
            "test_in_train": self.test_in_train,
            "new_papers_fraction": self.new_papers_fraction,
            "new_papers": 0 if self.new_rows is None else len(self.new_rows),
            "moved_to_test": self.moved_to_test,
        }


def with_new_papers(data: Dataset, fraction: float, seed: int) -> Dataset:
    """The dataset with ``fraction`` of its papers made new: chosen at random (``seed``),
    every training like of theirs moved to the test set, so no method learns from a like of
    them. They stay in the corpus (their content is known), as a new paper is in a digest.
    """
    if not 0 < fraction < 1:
        raise InvalidInput(f"the fraction of new papers must be between 0 and 1 (exclusive), "
                           f"got {fraction}")
    if data.new_rows is not None:
        raise InvalidInput("this dataset already has new papers")
    n = len(data.papers)
    count = min(n, max(1, round(fraction * n)))
    new = np.sort(np.random.default_rng(seed).choice(n, count, replace=False))
    train, test = [], []
    for liked, held in zip(data.train, data.test, strict=True):
        is_new = np.isin(liked, new)
        train.append(liked[~is_new])
        test.append(np.union1d(held, liked[is_new]).astype(np.int64))
    moved = sum(len(liked) for liked in data.train) - sum(len(liked) for liked in train)
    return replace(data, train=train, test=test, new_rows=new.astype(np.int64),
                   new_papers_fraction=fraction, moved_to_test=moved)


def load_dataset(
    papers: Path, train: Path, test: Path, on_problem: Callable[[str], None] = print
) -> Dataset:
    """Papers (JSONL or CSV, via ``read_papers``) and ``user<TAB>paper`` train/test files.

    Rejected papers, duplicate paper ids, malformed lines and lines naming unknown papers are
    reported through ``on_problem`` and skipped; the rest is used.
    """
    kept: list[Paper] = []
    row_of: dict[str, int] = {}
    rejected = 0
    for item in read_papers(papers):
        if isinstance(item, Rejection):
            rejected += 1
            on_problem(str(item))
        elif item.id in row_of:
            rejected += 1
            on_problem(f"{papers}: duplicate paper id {item.id!r}; kept the first")
        else:
            row_of[item.id] = len(kept)
            kept.append(item)
    if not kept:
        raise InvalidInput(f"{papers}: no usable papers (expected JSONL or CSV with id, title, "
                           f"abstract)")
    user_of: dict[str, int] = {}
    skipped = 0
    pairs: list[list[set[int]]] = [[], []]
    for part, path in enumerate((train, test)):
        for line, result in _interactions(path, row_of):
            if isinstance(result, str):
                skipped += 1
                on_problem(f"{path}:{line}: {result}")
                continue
            user, row = result
            if user not in user_of:
                user_of[user] = len(user_of)
                pairs[0].append(set())
                pairs[1].append(set())
            pairs[part][user_of[user]].add(row)
    overlap = sum(len(liked & held) for liked, held in zip(*pairs, strict=True))
    return Dataset(
        papers=kept,
        users=list(user_of),
        train=[np.array(sorted(liked), dtype=np.int64) for liked in pairs[0]],
        test=[np.array(sorted(held - liked), dtype=np.int64)
              for liked, held in zip(*pairs, strict=True)],
        rejected_papers=rejected,
        skipped_interactions=skipped,
        test_in_train=overlap,
    )


def _interactions(
    path: Path, row_of: dict[str, int]
) -> Iterator[tuple[int, tuple[str, int] | str]]:
    """(line number, (user, paper row) or the reason the line is skipped)."""
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file (expected user<TAB>paper lines)")
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig").rstrip("\r\n")
            except UnicodeDecodeError:
                yield number, "line is not valid UTF-8 text"
                continue
            if not line.strip():
                continue
            fields = [field.strip() for field in line.split("\t")]
            if len(fields) != 2 or not all(fields):
                yield number, "expected user<TAB>paper"
            elif fields[1] not in row_of:
                yield number, f"unknown paper {fields[1]!r}; skipped"
            else:
                yield number, (fields[0], row_of[fields[1]])


def paper_vectors(
    papers: Sequence[Paper], embedder: TextEncoder, cache: EmbeddingCache,
    progress: bool = True
) -> tuple[np.ndarray, int]:
    """Unit-length embeddings of ``Paper.text`` in paper order, and how many were new.

    Goes through the embedding cache (by model and content hash), so only text never seen
    before is embedded.
    """
    return cached_vectors(
        embedder, cache, [paper.content_hash for paper in papers],
        lambda missing: {p.content_hash: p.text for p in papers if p.content_hash in missing},
        progress,
    )



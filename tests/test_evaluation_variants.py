"""The ranking variants `paperrec evaluate` keeps for comparison (evaluation/variants.py), on
synthetic vectors whose answer is known: whitening sees past one direction of large
variance, and the co-like projection finds what readers like together where the content
does not."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import sparse

from recommender import wiring
from recommender.core.config import Settings
from recommender.evaluation.dataset import Dataset, load_dataset
from recommender.evaluation.methods import make_method
from recommender.evaluation.metrics import top_rows
from recommender.evaluation.variants import _co_like_directions


def dataset(tmp_path: Path, ids: list[str], train: list[str], test: list[str]) -> Dataset:
    (tmp_path / "papers.jsonl").write_text("".join(
        json.dumps({"id": pid, "title": f"Paper {pid}"}) + "\n" for pid in ids))
    (tmp_path / "train.tsv").write_text("".join(f"{line}\n" for line in train))
    (tmp_path / "test.tsv").write_text("".join(f"{line}\n" for line in test))
    return load_dataset(tmp_path / "papers.jsonl", tmp_path / "train.tsv",
                        tmp_path / "test.tsv", on_problem=lambda _: None)


def ranked(name: str, data: Dataset, vectors: np.ndarray, user: int = 0) -> list[str]:
    method = make_method(name, seed=0)
    method.fit(data, vectors)
    liked = data.train[user]
    return [data.paper_ids[r] for r in top_rows(method.scores(liked), liked)]


def test_whitening_sees_the_topic_past_a_direction_of_large_variance(tmp_path: Path) -> None:
    """Dimension 0 varies ten times more than the others: in centred cosine it decides,
    so the decoy (the liked paper's value there, the opposite topic) and fillers far out
    along it come first; whitened, the target sharing the liked paper's topic does."""
    rng = np.random.default_rng(0)
    fillers = rng.standard_normal((60, 16)) * np.r_[10.0, np.ones(15)]
    topic = np.r_[0.0, np.full(8, 3.0), np.zeros(7)]
    liked, target, decoy = topic + 20.0 * np.eye(16)[0], topic, 20.0 * np.eye(16)[0] - topic
    vectors = np.vstack([liked, target, decoy, fillers]).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = ["liked", "target", "decoy", *(f"f{i}" for i in range(60))]
    data = dataset(tmp_path, ids, ["u\tliked"], ["u\ttarget"])

    assert ranked("content-whitened", data, vectors)[0] == "target"
    assert "target" not in ranked("content-centred", data, vectors)[:5]


def test_the_co_like_directions_are_where_papers_liked_together_agree() -> None:
    """Pairs of papers liked by the same reader share dimension 7 and nothing else: the
    direction learned first is dimension 7."""
    rng = np.random.default_rng(1)
    pairs = rng.standard_normal((40, 2, 8))
    pairs[:, :, 7] = rng.choice([-1.0, 1.0], 40)[:, None]  # the same value within a pair
    x = pairs.reshape(80, 8)
    likes = np.zeros((40, 80))
    likes[np.repeat(np.arange(40), 2), np.arange(80)] = 1.0
    directions = _co_like_directions(x, sparse.csr_matrix(likes), dim=1, power=0.5)
    first = directions[:, 0] / np.linalg.norm(directions[:, 0])
    assert abs(first[7]) > 0.99


class TableEmbedder:
    """Vectors looked up by text (each paper's title), without a model."""

    variant = "test-table"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[text] for text in texts]).astype(np.float32)


def interest_groups(tmp_path: Path) -> tuple[Dataset, TableEmbedder]:
    """20 groups of 20 papers. A paper's vector is a topic of its own (8 dimensions, unrelated
    to its group) plus, five times weaker, its group's direction (16 dimensions): readers
    like two papers of one group. Ten readers a group co-like pairs in training; one more
    likes one paper of it and holds out another."""
    rng = np.random.default_rng(0)
    groups, per = 20, 20
    directions = rng.standard_normal((groups, 16))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    topics = rng.standard_normal((groups * per, 8))
    vectors = np.column_stack([topics, 0.2 * np.sqrt(8) * np.repeat(directions, per, axis=0)])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"g{g}p{i}" for g in range(groups) for i in range(per)]
    train, test = [], []
    for g in range(groups):
        for reader in range(10):
            a, b = rng.choice(per, 2, replace=False)
            train += [f"r{g}-{reader}\tg{g}p{a}", f"r{g}-{reader}\tg{g}p{b}"]
        a, b = rng.choice(per, 2, replace=False)
        train.append(f"t{g}\tg{g}p{a}")
        test.append(f"t{g}\tg{g}p{b}")
    data = dataset(tmp_path, ids, train, test)
    return data, TableEmbedder({p.text: v for p, v in zip(data.papers, vectors, strict=True)})


def test_the_co_like_projection_finds_what_readers_like_together(tmp_path: Path) -> None:
    """What makes papers liked together is five times weaker in their vectors than their
    topics: content cosine rarely finds the held-out paper of a reader's group in the top 20,
    the co-like projection, learned from the other readers' pairs, nearly always does."""
    data, embedder = interest_groups(tmp_path)
    app = wiring.build(Settings(data_dir=tmp_path / "var"), embedder=embedder)
    report = app.evaluate(data, ["content-centred", "colike-projection"], progress=False)
    recall = {name: figures["recall@20"] for name, figures in report["methods"].items()}
    assert recall["colike-projection"] >= 0.85
    assert recall["content-centred"] <= 0.2

"""What else could rank for a reader with ONE like (citeulike-a P1)? Issue 11's last target.

    .venv/bin/python benchmarks/ranking_experiments/one_like.py [--expect 0.3355] [--json OUT]

With one like, the production ranking is the augmented (DBA) cosine to that paper plus the
popularity term (the Fisher term, collaborative filtering and the walk need more likes).
This script scores every user of P1 in batches (a matrix product per 256 users, so a
variant takes seconds) over the vectors ``paperrec evaluate`` embeds (the default model and
backend, its embedding cache), and measures variants of each part: the augmentation, the
popularity prior, priors smoothed from the training likes, a lexical (TF-IDF) score added
to the dense one, the overlap of neighbour lists, titles embedded alone, and a Fisher term
at one like. Its
``production`` row must equal the `hybrid` row of ``paperrec evaluate`` on P1 (it checks
the Recall@300 it is given with ``--expect``). Prints JSON; ``--json`` writes it too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402
from common import load  # noqa: E402
from scipy import sparse  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402

from recommender.core.config import Settings  # noqa: E402
from recommender.evaluation.dataset import Dataset, paper_vectors  # noqa: E402
from recommender.evaluation.metrics import METRICS, top_rows, user_metrics  # noqa: E402
from recommender.index.content_space import (  # noqa: E402
    build_content_space,
    nearest_neighbours,
    normalise,
)
from recommender.ranking import scoring  # noqa: E402
from recommender.wiring import configured_embedder  # noqa: E402

BATCH = 256
# a batch of users -> (papers, users) scores
Scorer = Callable[[list[int]], np.ndarray]


def evaluate(data: Dataset, scores: Scorer) -> dict[str, float]:
    """The library's protocol (every paper not in training; Recall@20/50/100/300, nDCG@20)."""
    users = [u for u, held in enumerate(data.test) if len(held)]
    total = np.zeros(len(METRICS))
    for start in range(0, len(users), BATCH):
        batch = users[start : start + BATCH]
        table = np.asarray(scores(batch), dtype=np.float32)
        for column, user in enumerate(batch):
            ranked = top_rows(table[:, column], data.train[user])
            total += user_metrics(ranked, data.test[user])
    return {m: round(float(v), 4) for m, v in zip(METRICS, total / len(users), strict=True)}


def cosine_scorer(data: Dataset, vectors: np.ndarray, prior: np.ndarray,
                  extra: Callable[[list[int]], np.ndarray] | None = None,
                  fisher: tuple[float, float] = (0.0, 0.1)) -> Scorer:
    """Each user's mean cosine to their likes, minus the corpus mean's (as ``rank``), plus
    ``prior`` per paper and ``extra`` per user; ``fisher``: (weight, shrinkage) of the
    Fisher term for these users whatever their number of likes."""
    mean = vectors.mean(axis=0)
    weight, shrink = fisher
    precision = covariance = None
    if weight:
        centred = (vectors - mean).astype(np.float64)
        cov = centred.T @ centred / (len(centred) - 1)
        dim = len(cov)
        covariance = (1 - shrink) * cov + shrink * np.trace(cov) / dim * np.eye(dim)
        precision = np.linalg.inv(covariance)

    def scores(users: list[int]) -> np.ndarray:
        queries = np.stack([vectors[data.train[u]].mean(axis=0) for u in users])
        if precision is not None and covariance is not None:
            q = queries.astype(np.float64)
            f = q @ precision
            spread = np.sqrt(np.einsum("bd,de,be->b", q, covariance, q))
            f_spread = np.sqrt(np.einsum("bd,de,be->b", f, covariance, f))
            queries = (q + weight * (spread / f_spread)[:, None] * f).astype(np.float32)
        table = vectors @ queries.T - (mean @ queries.T)[None, :] + prior[:, None]
        return table if extra is None else table + extra(users)
    return scores


def publish(report: dict[str, object], path: Path | None) -> None:
    """Print the report as JSON, and write it to ``path`` too when given."""
    print(json.dumps(report, indent=1))
    if path:
        path.write_text(json.dumps(report, indent=1) + "\n")


def augmented(centred: np.ndarray, rows: np.ndarray, sims: np.ndarray, k: int,
              power: float) -> np.ndarray:
    """DBA with k neighbours and weights sim**power (the production space: 10 and 3)."""
    weights = np.maximum(sims[:, :k], 0.0) ** power
    return normalise(centred + np.einsum("nk,nkd->nd", weights, centred[rows[:, :k]]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect", type=float, default=None,
                        help="Recall@300 of `paperrec evaluate`'s hybrid on P1 (0.3355)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    data = load("P1")
    settings = Settings()
    embedder = configured_embedder(settings)
    raw, _ = paper_vectors(data.papers, embedder,
                           settings.embedding_cache_path, progress=False)
    space = build_content_space(raw, exact_max=10**9)
    counts = data.like_counts.astype(np.float64)
    popularity = scoring.POPULARITY_WEIGHT * np.log1p(counts) / np.log1p(counts).max()
    results: dict[str, dict[str, float]] = {}

    def run(name: str, scorer: Scorer) -> None:
        started = time.perf_counter()
        results[name] = {**evaluate(data, scorer),
                         "seconds": round(time.perf_counter() - started, 1)}
        print(name, results[name], file=sys.stderr, flush=True)

    V = space.vectors
    run("production (DBA k=10 power 3, popularity 0.3)", cosine_scorer(data, V, popularity))
    if args.expect is not None:
        got = results["production (DBA k=10 power 3, popularity 0.3)"]["recall@300"]
        if abs(got - args.expect) > 0.0005:
            raise SystemExit(f"production row {got} differs from `paperrec evaluate`'s "
                             f"{args.expect}: this harness does not rank as `rank` does")
    run("no popularity", cosine_scorer(data, V, np.zeros(len(V))))
    logs = np.log1p(counts) / np.log1p(counts).max()
    for name, prior in [("popularity 0.2", 0.2 * logs), ("popularity 0.4", 0.4 * logs),
                        ("popularity sqrt 0.3", 0.3 * np.sqrt(counts) / np.sqrt(counts).max()),
                        ("popularity c/(c+3) 0.2", 0.2 * counts / (counts + 3))]:
        run(name, cosine_scorer(data, V, prior))
    # Popularity weighed per reader by how popular their own like is (a reader of popular
    # papers reads popular papers: popularity propensity), or per paper by its closeness to
    # the like (popular papers of the reader's topic).
    others = np.log1p(np.maximum(counts - 1, 0)) / np.log1p(counts).max()  # not the reader
    liked_rows = np.asarray([int(rows[0]) for rows in data.train if len(rows)])
    spread_others = (others[liked_rows].mean(), others[liked_rows].std())
    for beta in (0.3, 1.0):
        def propensity(users: list[int], beta: float = beta) -> np.ndarray:
            mine = others[[int(data.train[u][0]) for u in users]]
            weight = np.maximum(1 + beta * (mine - spread_others[0]) / spread_others[1], 0)
            return popularity[:, None] * (weight - 1)[None, :]  # on top of the plain term
        run(f"popularity x the reader's propensity ({beta:g})",
            cosine_scorer(data, V, popularity, propensity))
    plain = cosine_scorer(data, V, np.zeros(len(V)))
    for weight, floor in [(0.5, 0.2), (1.0, 0.3)]:
        def on_topic(users: list[int], weight: float = weight,
                     floor: float = floor) -> np.ndarray:
            return weight * logs[:, None] * np.maximum(plain(users) - floor, 0)
        run(f"+ popularity x closeness above {floor:g} ({weight:g})",
            cosine_scorer(data, V, popularity, on_topic))
    # Priors smoothed through the content: the training likes spread over the neighbour
    # graph (a topic many readers like), the community's mean liked vector, and density.
    for power, weight in [(1.0, 0.1), (3.0, 0.1), (1.0, 0.3)]:
        spread = (np.maximum(space.neighbour_sims, 0) ** power * counts[space.neighbours]).sum(1)
        smoothed = np.log1p(spread) / np.log1p(spread).max()
        run(f"+ likes smoothed over the graph (power {power:g}) {weight:g}",
            cosine_scorer(data, V, popularity + weight * smoothed))
    community = V @ ((counts[:, None] * V).sum(axis=0) / counts.sum())
    community = (community - community.mean()) / community.std()
    for weight in (0.01, 0.03):
        run(f"+ community direction {weight:g}", cosine_scorer(data, V, popularity
                                                            + weight * community))
    density = space.neighbour_sims[:, :10].mean(axis=1)
    for weight in (-0.2, -0.1, 0.1):
        run(f"+ density {weight:g} (negative: hubness reduction)",
            cosine_scorer(data, V, popularity + weight * density))
    # Lexical: TF-IDF cosine to the likes added to the dense score.
    tfidf = TfidfVectorizer(sublinear_tf=True, stop_words="english", min_df=2).fit_transform(
        [paper.text for paper in data.papers])
    for weight in (0.05, 0.1, 0.2):
        def lexical(users: list[int], weight: float = weight) -> np.ndarray:
            liked = np.asarray(np.vstack([tfidf[data.train[u]].mean(axis=0) for u in users]))
            return weight * np.asarray(tfidf @ liked.T)
        run(f"+ TF-IDF cosine {weight:g}", cosine_scorer(data, V, popularity, lexical))
    # Neighbour-set overlap with the like (k-reciprocal re-ranking, as in image retrieval
    # and person re-identification): the Jaccard overlap of the two papers' stored
    # neighbour lists, each with the paper itself.
    n = len(V)
    for k, weight in [(10, 0.1), (20, 0.05), (20, 0.1)]:
        members = np.concatenate([np.arange(n)[:, None], space.neighbours[:, :k]], axis=1)
        sets = sparse.csr_matrix((np.ones(members.size), (np.repeat(np.arange(n), k + 1),
                                                          members.ravel())), shape=(n, n))

        def overlap(users: list[int], sets: sparse.csr_matrix = sets, k: int = k,
                    weight: float = weight) -> np.ndarray:
            liked = [int(data.train[u][0]) for u in users]  # one like each (P1)
            shared = (sets @ sets[liked].T).toarray()
            return weight * shared / (2 * (k + 1) - shared)
        run(f"+ neighbour-set overlap (k={k}) {weight:g}",
            cosine_scorer(data, V, popularity, overlap))
    # Titles embedded alone (most papers are a title; the others' text mixes in the
    # abstract): mixed into the raw vectors, or their own space's cosine added.
    raw_titles = np.asarray(embedder.encode([paper.title for paper in data.papers]),
                            dtype=np.float32)
    for mix in (0.3, 0.5):
        mixed = build_content_space(normalise((1 - mix) * raw + mix * raw_titles), 10**9)
        run(f"titles alone mixed in {mix:g}", cosine_scorer(data, mixed.vectors, popularity))
    titles = build_content_space(raw_titles, exact_max=10**9).vectors
    title_scores = cosine_scorer(data, titles, np.zeros(len(V)))
    for weight in (0.3, 1.0):
        def with_titles(users: list[int], weight: float = weight) -> np.ndarray:
            return weight * title_scores(users)
        run(f"+ cosine of the titles alone {weight:g}",
            cosine_scorer(data, V, popularity, with_titles))
    # The augmentation: more neighbours, other weights.
    centred = normalise(raw - raw.mean(axis=0))
    rows, sims = nearest_neighbours(centred, 50, 10**9)
    for k, power in [(20, 3.0), (30, 3.0), (50, 3.0), (20, 2.0), (30, 2.0)]:
        run(f"DBA k={k} power {power:g}",
            cosine_scorer(data, augmented(centred, rows, sims, k, power), popularity))
    # The Fisher term at one like (production: weight 0 below two likes).
    for weight, shrink in [(0.1, 0.1), (0.2, 0.1), (0.1, 0.5), (0.3, 0.5), (0.5, 0.8)]:
        run(f"Fisher weight {weight:g} shrinkage {shrink:g}",
            cosine_scorer(data, V, popularity, fisher=(weight, shrink)))
    report = {"split": "P1", "papers": len(data.papers),
              "with_abstract": int(sum(bool(p.abstract.strip()) for p in data.papers)),
              "results": results}
    publish(report, args.json)


if __name__ == "__main__":
    main()

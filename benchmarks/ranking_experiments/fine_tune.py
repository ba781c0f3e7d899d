"""Does adapting the bundled model to the corpus help a reader with one like (P1)?

    .venv/bin/python benchmarks/ranking_experiments/fine_tune.py \
        [--objective neighbours|simcse] [--epochs 1] [--json OUT]

Self-supervised, as nothing else is there with one like a reader. Each paper's positive is
one of its ``--positives`` nearest neighbours under the model as shipped (centred space;
``neighbours``), or the same text again under another dropout (``simcse``, unsupervised
SimCSE); the other papers of the batch are its negatives (InfoNCE, temperature
``--temperature``). The model as shipped and the adapted one both embed the corpus on the
torch backend (the same code, so the comparison is fair), and both are scored as
``one_like.py``'s production row ranks (the service's content space and popularity). An
epoch takes about 8 minutes on 2 cores alone, three times that beside other jobs. Prints
JSON; ``--json`` writes it too.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from common import load
from one_like import cosine_scorer, evaluate, publish

from recommender.embedding.models import load_model
from recommender.index.content_space import build_content_space, nearest_neighbours, normalise
from recommender.ranking import scoring

TRAIN_TOKENS = 32  # titles are 9 words at the median; abstracts are cut to their start
EMBED_TOKENS = 256  # as the model embeds for the service


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objective", choices=["neighbours", "simcse"], default="neighbours")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--positives", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    data = load("P1")
    texts = [paper.text for paper in data.papers]
    shipped = load_model("all-MiniLM-L6-v2")
    model: Any = shipped[0].auto_model  # a transformers BertModel
    tokenizer = shipped.tokenizer

    def embed(batch: list[str], tokens: int) -> torch.Tensor:
        encoded = tokenizer(batch, padding=True, truncation=True, max_length=tokens,
                            return_tensors="pt")
        hidden = model(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).float()
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)

    def corpus() -> np.ndarray:
        model.eval()
        out = np.zeros((len(texts), model.config.hidden_size), np.float32)
        order = np.argsort([len(t) for t in texts])  # like lengths together: less padding
        with torch.no_grad():
            for start in range(0, len(order), 128):
                rows = order[start : start + 128]
                out[rows] = embed([texts[i] for i in rows], EMBED_TOKENS).numpy()
        return out

    counts = data.like_counts.astype(np.float64)
    popularity = scoring.POPULARITY_WEIGHT * np.log1p(counts) / np.log1p(counts).max()

    def figures(raw: np.ndarray) -> dict[str, float]:
        space = build_content_space(raw, exact_max=10**9)
        return evaluate(data, cosine_scorer(data, space.vectors, popularity))

    started = time.perf_counter()
    before = corpus()
    results = {"as shipped": figures(before)}
    print("as shipped", results["as shipped"], file=sys.stderr, flush=True)
    positives, _ = nearest_neighbours(normalise(before - before.mean(axis=0)), args.positives,
                                      10**9)
    rng = np.random.default_rng(0)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr)
    losses = []
    for _ in range(args.epochs):
        model.train()
        order = rng.permutation(len(texts))
        for start in range(0, len(order) - args.batch + 1, args.batch):
            rows = order[start : start + args.batch]
            pairs = (rows if args.objective == "simcse"
                     else positives[rows, rng.integers(0, args.positives, len(rows))])
            anchors = embed([texts[i] for i in rows], TRAIN_TOKENS)
            others = embed([texts[i] for i in pairs], TRAIN_TOKENS)
            loss = torch.nn.functional.cross_entropy(anchors @ others.T / args.temperature,
                                                     torch.arange(len(rows)))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(float(loss.detach()))
            if len(losses) % 50 == 0:
                print(f"step {len(losses)}: loss {np.mean(losses[-50:]):.4f}",
                      file=sys.stderr, flush=True)
    results["adapted"] = figures(corpus())
    report = {"split": "P1", **{k: v for k, v in vars(args).items() if k != "json"},
              "steps": len(losses), "seconds": round(time.perf_counter() - started),
              "results": results}
    publish(report, args.json)


if __name__ == "__main__":
    main()

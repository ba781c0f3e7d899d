"""Measure ranking ideas on citeulike-a: the standard protocol and/or the new-papers one.

    .venv/bin/python benchmarks/ranking_experiments/run.py --split P10 \
        --methods centred-mean,hybrid,centred-softmax:t=0.05 --protocols standard,new

Prints one JSON document and appends its figures to results.md (``--no-append``: not).
Method specs, comma-separated: see ``FACTORIES`` (``name`` or ``name:key=value;key=value``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from functools import partial

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
os.environ.setdefault("MKL_NUM_THREADS", "2")

from common import (  # noqa: E402
    Scorer,
    among_new,
    append_results,
    load,
    new_papers_split,
    raw_vectors,
    standard,
    timed,
)
from learned import Lexical, PerUser, Projected  # noqa: E402
from scorers import Blend, Collaborative, Cosine, Hybrid  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

Params = dict[str, float]


def _cos(space: str, how: str, aqe: bool = False) -> Callable[[str, Params], Scorer]:
    return lambda name, p: Cosine(name, space, how, p.get("t", 0.05), aqe, p.get("s", 0.1))


def _cf(kind: str) -> Callable[[str, Params], Scorer]:
    return lambda name, p: Collaborative(name, kind, int(p.get("k", 100)))


def _gate(kind: str, mode: str = "gate") -> Callable[[str, Params], Scorer]:
    return lambda name, p: Blend(name, Collaborative(kind, kind, int(p.get("k", 100))),
                                 p.get("w", 0.1), mode, p.get("h", 30.0))


FACTORIES: dict[str, Callable[[str, Params], Scorer]] = {
    "raw-mean": _cos("raw", "mean"),
    "centred-mean": _cos("centred", "mean"),
    "centred-max": _cos("centred", "max"),
    "centred-mix": _cos("centred", "mix"),
    "centred-softmax": _cos("centred", "softmax"),
    "whiten-mean": _cos("whiten", "mean"),
    "dba-mean": _cos("dba", "mean"),
    "wdba-mean": _cos("wdba", "mean"),
    "dba-mix": _cos("dba", "mix"),
    "dba-aqe-mean": _cos("dba", "mean", aqe=True),
    "dba-aqe-mix": _cos("dba", "mix", aqe=True),
    "dba-aqe-softmax": _cos("dba", "softmax", aqe=True),
    "hybrid": lambda name, p: Hybrid(name),
    "cf-als": _cf("als"),
    "cf-bpr": _cf("bpr"),
    "cf-bm25": _cf("bm25"),
    "cf-cosine": _cf("cosine"),
    "gate-als": _gate("als"),
    "gate-bpr": _gate("bpr"),
    "gate-bm25": _gate("bm25"),
    "gate-cosine": _gate("cosine"),
    "z-bm25": _gate("bm25", "z"),
    "pop": lambda name, p: Blend(name, None, p.get("w", 0.3), "pop"),
    "dba-pop": lambda name, p: Blend(name, None, p.get("w", 0.3), "pop",
                                     base=Cosine("dba-aqe-mean", "dba", "mean", aqe=True)),
    "dbam-pop": lambda name, p: Blend(name, None, p.get("w", 0.3), "pop",
                                      base=Cosine("dba-mean", "dba", "mean")),
    "proj-eig": lambda name, p: Projected(name, "eig", int(p.get("d", 128)), p.get("p", 0.5),
                                          p.get("b", -1.0)),
    "proj-nce": lambda name, p: Projected(name, "nce", blend=p.get("b", -1.0),
                                          epochs=int(p.get("e", 3)),
                                          temperature=p.get("t", 0.05),
                                          anchor=p.get("a", 1e-3)),
    "lr": lambda name, p: PerUser(name, "lr", p.get("w", 1.0), p.get("c", 1.0)),
    "fisher": lambda name, p: PerUser(name, "fisher", p.get("w", 1.0), shrink=p.get("s", 0.1),
                                      min_likes=int(p.get("m", 1)), dba=bool(p.get("d", 0))),
    "tfidf": lambda name, p: Lexical(name, p.get("w", -1.0)),
}


def make(spec: str) -> Scorer:
    kind, _, args = spec.partition(":")
    if kind not in FACTORIES:
        raise SystemExit(f"unknown method {kind!r}; choose from {', '.join(FACTORIES)}")
    params = {key: float(value) for key, value in
              (item.split("=") for item in args.split(";") if item)}
    return FACTORIES[kind](spec, params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="P10", choices=["P1", "P10"])
    parser.add_argument("--methods", required=True,
                        help="comma-separated method specs (name:key=value;key=value)")
    parser.add_argument("--protocols", default="standard,new")
    parser.add_argument("--new-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    specs = [s for s in args.methods.split(",") if s]
    protocols = args.protocols.split(",")
    data = load(args.split)
    vectors = raw_vectors(data)
    results: dict[str, dict[str, dict[str, float]]] = {p: {} for p in protocols}
    with threadpool_limits(2):
        for spec in specs:
            if "standard" in protocols:
                scorer = make(spec)
                scorer.fit(data, vectors)
                results["standard"][spec] = timed(partial(standard, scorer, data))
                print(spec, "standard", results["standard"][spec], file=sys.stderr)
            if "new" in protocols:
                held, new = new_papers_split(data, args.new_fraction, args.seed)
                scorer = make(spec)
                scorer.fit(held, vectors)
                results["new"][spec] = timed(partial(among_new, scorer, held, new))
                print(spec, "new", results["new"][spec], file=sys.stderr)
    report = {"split": args.split, "seed": args.seed, "new_fraction": args.new_fraction,
              "results": results}
    print(json.dumps(report, indent=1))
    if not args.no_append:
        command = "run.py " + " ".join(sys.argv[1:])
        append_results(command, {**report, "results": {
            f"{args.split} {p}": rows for p, rows in results.items()}})


if __name__ == "__main__":
    main()

"""The benchmarks' shared harness: their options, the machine they ran on, medians and
side-by-side runs, and one results file per benchmark.

A benchmark is a module of this package, run from the repository root as
``python -m benchmarks.NAME`` (its ``--help`` says what it measures and its options). It
declares itself with ``Benchmark(NAME, __doc__)`` and its options with ``option(...,
quick=...)``: ``--quick`` runs it at small sizes (what ``make bench`` runs), which proves that
it runs, not what it measures. ``record`` prints one JSON document, with the command and the
machine's facts, and writes it atomically to ``benchmarks/results/NAME.json``: the latest
run only, since git keeps the history. A benchmark whose sizes (or settings) are run one at
a time records each as a part of that file (``part=``), keeping the others. A ``--quick`` run
writes ``var/bench/results/NAME.json`` instead, so quick figures never replace recorded ones.

Scratch data the benchmarks keep between runs (built indexes, generated corpora) lives in
``var/bench`` (``WORK``, not in git), and so does the one embedding cache they share
(``workspace()``: by model and text, so a paper is embedded once for all of them).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from recommender import wiring
from recommender.core.config import Settings
from recommender.embedding.encoders import TextEncoder
from recommender.storage.versions import write_atomically

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
WORK = ROOT / "var" / "bench"
QUICK_RESULTS = WORK / "results"
# The sample data (DESIGN.md, "Sample data in ../shared"): citeulike-a and the ICML seeds.
SHARED = Path(os.environ.get("PAPERREC_SHARED_DATA", "/work/shared"))
CITEULIKE = SHARED / "data" / "citeulike-a"
# Versions recorded beside the figures when the benchmark imported them.
LIBRARIES = ("faiss-cpu", "torch", "onnxruntime", "sentence-transformers", "implicit", "tantivy")

T = TypeVar("T")


class Benchmark:
    """A benchmark's name, its options (each with its ``--quick`` value) and its record."""

    def __init__(self, name: str, doc: str | None) -> None:
        self.name = name
        self.parser = argparse.ArgumentParser(
            prog=f"python -m benchmarks.{name}", description=doc, allow_abbrev=False,
            formatter_class=argparse.RawDescriptionHelpFormatter)
        self.parser.add_argument(
            "--quick", action="store_true",
            help="small sizes, to prove it runs (figures go to var/bench/results)")
        self.parser.add_argument(
            "--out", type=Path, metavar="JSON",
            help=f"results file (default: benchmarks/results/{name}.json)")
        self._quick: dict[str, Any] = {}

    def option(self, *flags: str, quick: Any = None, **kwargs: Any) -> None:
        """``ArgumentParser.add_argument``; ``quick``: the value under ``--quick`` (unless the
        option is given). The help says both defaults."""
        defaults = []
        default = kwargs.get("default")
        if not (default is None or default is False or default == argparse.SUPPRESS):
            defaults.append("default: %(default)s")
        if quick is not None:
            defaults.append(f"--quick: {quick}")
        if defaults and "help" in kwargs:
            kwargs["help"] += f" ({'; '.join(defaults)})"
        action = self.parser.add_argument(*flags, **kwargs)
        if quick is not None:
            self._quick[action.dest] = quick

    def parse(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        """The options; also ``command`` (how to run this again) and ``out`` resolved."""
        given = list(sys.argv[1:] if argv is None else argv)
        if "--quick" in given:
            self.parser.set_defaults(**self._quick)
        args = self.parser.parse_args(given)
        args.command = " ".join([f"python -m benchmarks.{self.name}", *given])
        if args.out is None:
            args.out = (QUICK_RESULTS if args.quick else RESULTS) / f"{self.name}.json"
        return args

    def record(self, args: argparse.Namespace, result: dict[str, Any],
               part: str | None = None) -> dict[str, Any]:
        """Print this run's document and write it to ``args.out`` (as ``part`` of it, keeping
        the file's other parts, when given)."""
        document = {"benchmark": self.name, "command": args.command, "quick": args.quick,
                    "machine": machine(), **result}
        print(json.dumps(document, indent=2))
        whole = document
        if part is not None:
            parts = dict(read_results(args.out).get("parts", {}))
            parts[part] = document
            whole = {"benchmark": self.name, "parts": parts}
        write_json(args.out, whole)
        log(f"wrote {display(args.out)}")
        return document


def read_results(path: Path) -> dict[str, Any]:
    """A results file, or nothing when there is none yet."""
    return dict(json.loads(path.read_text())) if path.exists() else {}


def write_json(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=2) + "\n"
    write_atomically(path, lambda handle: handle.write(text.encode()))


def display(path: Path) -> str:
    """``path`` relative to the checkout when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


# --- the machine ----------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    """CPU model, cores, memory, Python and library versions, the checkout's commit, the date
    and the load average: what a figure depends on besides the code."""
    facts: dict[str, Any] = {
        "cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor(),
        "cores": os.cpu_count(), "cores_usable": len(os.sched_getaffinity(0)),
        "memory_gib": round(int((_proc_field("/proc/meminfo", "MemTotal") or "0 kB")
                                .split()[0]) / 2**20, 1),
        "python": platform.python_version(), "numpy": np.__version__,
    }
    for library in LIBRARIES:
        if library.replace("-cpu", "").replace("-", "_") in sys.modules:
            facts[library] = metadata.version(library)
    facts.update(commit=commit(), date=datetime.datetime.now(datetime.UTC).isoformat(
        timespec="seconds"), load_average=[round(x, 2) for x in os.getloadavg()])
    return facts


def _proc_field(path: str, name: str) -> str | None:
    for line in Path(path).read_text().splitlines():
        if line.startswith(name):
            return line.split(":", 1)[1].strip()
    return None


def commit() -> str:
    """The checkout's commit, ``-dirty`` when code differs from it (results files aside)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=False).stdout.strip()

    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                  ":!benchmarks/results")
    return (git("rev-parse", "--short", "HEAD") or "unknown") + ("-dirty" if changed else "")


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- figures --------------------------------------------------------------------------------

def median(values: Iterable[float], digits: int = 3) -> float:
    return round(float(statistics.median(values)), digits)


def percentiles(values: Sequence[float], quantiles: Sequence[int] = (50, 99), *,
                scale: float = 1.0, suffix: str = "", digits: int = 2) -> dict[str, float]:
    """``{"p50<suffix>": ..., ...}`` of ``values`` times ``scale`` (e.g. 1000 and "_ms" for
    seconds in milliseconds); nothing for no values."""
    if not len(values):
        return {}
    found = np.percentile(np.asarray(values, dtype=np.float64) * scale, quantiles)
    return {f"p{q}{suffix}": round(float(v), digits) for q, v in zip(quantiles, found,
                                                                     strict=True)}


def timed(run: Callable[[], T]) -> tuple[float, T]:
    """Seconds ``run`` took, and what it returned."""
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def interleaved(names: Sequence[str], repeats: int) -> Iterator[tuple[int, str]]:
    """(repeat, name) for each repeat of each contestant, every repeat starting one further
    along, so that a busy, shared machine slows them all alike."""
    for repeat in range(repeats):
        start = repeat % len(names)
        for name in [*names[start:], *names[:start]]:
            yield repeat, name


def paired_ratio(base: Sequence[float], other: Sequence[float], digits: int = 3) -> float:
    """The median of the per-repeat ratios other / base: what counts on a shared machine,
    where whole repeats run slower or faster."""
    return median((o / b for b, o in zip(base, other, strict=True)), digits)


def run_in_checkout(checkout: Path, module: str | Path, argv: list[str]) -> Any:
    """Run ``python -m module argv`` with another checkout's ``recommender`` and ``service``
    (that checkout first on PYTHONPATH, then this one for the benchmarks; PYTHONSAFEPATH keeps
    the working directory off the path): the JSON of its last line of output. This is how
    two trees are measured side by side without editing ``sys.path``. ``module`` a path: that
    script (of this tree), for a measuring side the other checkout may not have."""
    env = {**os.environ, "PYTHONSAFEPATH": "1",
           "PYTHONPATH": os.pathsep.join([str(checkout), str(ROOT)])}
    target = [str(module)] if isinstance(module, Path) else ["-m", module]
    done = subprocess.run([sys.executable, *target, *argv], env=env, cwd=ROOT,
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])


# --- the workspace ----------------------------------------------------------------------------

SHARED_EMBEDDINGS = WORK / "embeddings.sqlite"


def workspace(embedder: TextEncoder | None = None, **settings: Any) -> wiring.Paperrec:
    """The application over ``var/bench`` (the settings from the environment, e.g.
    PAPERREC_MODEL, and these; ``embedder`` instead of the configured one): its embedding
    cache is the one the benchmarks share."""
    WORK.mkdir(parents=True, exist_ok=True)
    return wiring.build(Settings.from_env(data_dir=WORK, **settings), embedder=embedder)


def seed_embeddings(settings: Settings) -> None:
    """Start a fresh data dir's embedding cache as a copy of the shared one."""
    if SHARED_EMBEDDINGS.exists():
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(SHARED_EMBEDDINGS, settings.embedding_cache_path)


def keep_embeddings(settings: Settings) -> None:
    """Make a data dir's embedding cache (a superset of the shared one it started from) the
    shared one, so that what it embedded is not embedded again."""
    WORK.mkdir(parents=True, exist_ok=True)
    shutil.copy(settings.embedding_cache_path, SHARED_EMBEDDINGS)

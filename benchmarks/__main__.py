"""``python -m benchmarks``: what each benchmark measures (the first line of its docstring);
``python -m benchmarks --quick``: the quick suite (``make bench``), each benchmark in its own
process with ``--quick``, its figures in var/bench/results.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import time
from pathlib import Path

PACKAGE = Path(__file__).parent
# What the benchmarks share, not benchmarks themselves.
HELPERS = {"__init__", "__main__", "harness", "citeulike", "synthetic", "served",
           "index_search", "index_memory", "rank_cost_child", "api_latency_child",
           "loadtest_client", "build_1m_records", "hostile_client", "online_log_child"}
# Each runs in a minute or less with --quick on 2 idle cores (`make bench`). The others
# prove they run with --quick too, but load the model in several processes or fit the
# ranking several times over (calibration, embedding, embed_cluster, models, intake,
# rebuild, recommendations, build_1m).
QUICK = ("harvest", "training", "like_counts", "redis_memory", "index", "web_page",
         "path_cost", "rank_cost", "api_latency", "loadtest", "hostile_requests", "online_log")


def benchmarks() -> dict[str, str]:
    """Each benchmark's name and the first line of its docstring (read, not imported)."""
    found = {}
    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem not in HELPERS:
            doc = ast.get_docstring(ast.parse(path.read_text())) or ""
            first = doc.split("\n\n")[0].replace("\n", " ")
            found[path.stem] = re.split(r"(?<=\.)\s", first, maxsplit=1)[0]
    return found


def run_quick(names: tuple[str, ...]) -> int:
    failed = []
    for name in names:
        started = time.perf_counter()
        print(f"== python -m benchmarks.{name} --quick", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", "--quick"],
                              stdout=subprocess.DEVNULL, check=False)
        print(f"== {name}: {'ok' if done.returncode == 0 else 'FAILED'} in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        if done.returncode:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"run the quick suite: {', '.join(QUICK)}")
    args = parser.parse_args(argv)
    if args.quick:
        return run_quick(QUICK)
    for name, summary in benchmarks().items():
        print(f"{name:16} {summary}")
    print("\npython -m benchmarks.NAME --help: what it measures and its options")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The benchmarks, one module each, run from the repository root as
``python -m benchmarks.NAME`` (``--help``: what it measures and its options; ``--quick``:
small sizes). ``python -m benchmarks`` lists them; ``make bench`` runs the quick ones.
``benchmarks.harness`` is what they share (options, machine facts, medians, results files).
"""

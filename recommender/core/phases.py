"""PhaseClock: how long each step of a batch job took, and the memory it had reached.

``rebuild-index`` at a million papers runs for most of an hour; its summary (and the index
version's ``meta.json``) says where that went, so that a slow or memory-hungry step is found
from the job's own output rather than by profiling it again.
"""

from __future__ import annotations

import resource
import sys
import time


def peak_rss_gib() -> float:
    """The most resident memory this process has held so far, in GiB (the kernel's
    high-water mark: no sampling gaps)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**30 if sys.platform == "darwin" else peak / 2**20  # bytes / KiB


class PhaseClock:
    """Seconds per named phase, in the order they ran, with the process's peak resident
    memory at the end of each (it only grows: the phase where it jumps is the one that
    needed the memory). ``lap(name)`` closes the phase that ran since the previous lap."""

    def __init__(self) -> None:
        self.phases: dict[str, dict[str, float]] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        spent = self.phases.get(name, {}).get("seconds", 0.0) + now - self._last
        self.phases[name] = {"seconds": round(spent, 3), "peak_rss_gib": round(peak_rss_gib(), 3)}
        self._last = now

    def __str__(self) -> str:
        return ", ".join(f"{name} {phase['seconds']:.1f} s" for name, phase in self.phases.items())

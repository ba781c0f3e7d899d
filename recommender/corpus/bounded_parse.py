"""Reading an uploaded library file in a process of its own, bounded in time, memory and
number, so that one reader's file cannot take the CPU or the memory of the service.

``parse_library`` bounds what it reads (entries, characters of LaTeX to decode, text after
@string macros: ``library``, ``latex_text``), but a 10 MB file of the costliest markup within
those bounds still takes seconds of CPU, and in a gunicorn gthread worker a request thread
that parses holds the worker's GIL: every other request of that worker waits (reported: a
1 MB file of accents took 36 s, and other readers' lists went from 0.09 s to 2.7 s). So the
parse runs in a child process (``BoundedParser``, one per worker process):

- at the lowest CPU priority (nice 19): the service's own threads keep the cores, and the
  parse gets what they leave;
- under a memory cap (RLIMIT_AS, ``ParseLimits.memory``, 1 GiB: a real 10 MB export needs
  160 MB, the costliest file within the limits 400 MB): past it the parse fails with
  MemoryError, answered as TooCostly;
- against a deadline (``ParseLimits.seconds``, 60 s: the costliest real 10 MB export we
  could make took 21 s on 2 cores at a load of 7, the more so as the child yields them;
  gunicorn's worker timeout is 120 s): the child is killed and the upload refused as
  TooCostly, saying to split the file. An RLIMIT_CPU of the same seconds has the kernel end
  a child whose parent is gone;
- at most ``ParseLimits.parallel`` (2) children per worker process at once; the next upload
  waits ``ParseLimits.wait`` seconds for one to finish, then is told to retry (Busy, 503).

Why a fresh interpreter (``python -m recommender.corpus.bounded_parse``) for each upload. A
fork of the worker copies a threaded process (a lock another thread holds, as logging's,
stays held in the child for ever) and its gigabytes of model and index mappings, which an
address-space cap would have to sit above. multiprocessing's forkserver and spawn run the
parent's main module again in the child (the `paperrec` script, pytest's, a benchmark's:
one without a ``__main__`` guard starts over). A child that runs this module alone costs
0.2 to 0.4 s of start-up (importing the parsers), small beside the parse of any file worth
bounding. The file goes to the child on its stdin; the answer comes back as JSON (not a
pickle: the child has read hostile bytes, and its answer is parsed as data, never as code)
on a copy of its stdout, the real one pointing at stderr so that nothing printed on the way
can pass for the answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import resource
import signal
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recommender.core.errors import (
    Busy,
    InvalidInput,
    PaperrecError,
    TooCostly,
    TooLarge,
    UnsupportedFormat,
)
from recommender.core.papers import Paper
from recommender.corpus.library import (
    FORMATS,
    LibraryEntry,
    LibraryFormat,
    LibraryRejection,
    ParsedLibrary,
    parse_library,
)

log = logging.getLogger(__name__)
NICE = 19
# What parse_library raises for a file it refuses, by code, to raise again in the parent.
_REFUSALS = {error.code: error for error in (InvalidInput, TooLarge, UnsupportedFormat)}


@dataclass(frozen=True)
class ParseLimits:
    seconds: float = 60.0  # wall clock, from the child's start to its answer
    memory: int = 2**30  # bytes of address space of the child (RLIMIT_AS)
    parallel: int = 2  # children of one process at once
    wait: float = 10.0  # seconds an upload waits for a free child before Busy


class BoundedParser:
    """``parse_library`` in a child process, within ``limits``; one per process (its slots
    count this process's children)."""

    def __init__(self, limits: ParseLimits | None = None) -> None:
        self.limits = limits or ParseLimits()
        self._slots = threading.BoundedSemaphore(self.limits.parallel)
        self._children: set[int] = set()
        self._lock = threading.Lock()

    @property
    def children(self) -> list[int]:
        """The process ids of the children reading a file now."""
        with self._lock:
            return sorted(self._children)

    def parse(self, text: str, fmt: LibraryFormat) -> ParsedLibrary:
        """What ``parse_library(text, fmt)`` returns or raises; TooCostly past the deadline or
        the memory cap, Busy when no child is free within ``limits.wait`` seconds."""
        if not self._slots.acquire(timeout=self.limits.wait):
            raise Busy(f"{self.limits.parallel} library files are being read here now, the "
                       "most at once; send yours again in a little while")
        try:
            return self._run(text, fmt)
        finally:
            self._slots.release()

    def _run(self, text: str, fmt: LibraryFormat) -> ParsedLibrary:
        limits = self.limits
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, fmt, repr(limits.seconds), str(limits.memory)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)  # a scheduling group of its own: see _child
        with self._lock:
            self._children.add(child.pid)
        late = False
        try:
            answer, errors = child.communicate(text.encode("utf-8", "surrogatepass"),
                                               timeout=limits.seconds)
        except subprocess.TimeoutExpired:
            late, answer, errors = True, b"", b""
        finally:
            if child.returncode is None:  # late, or this thread was interrupted
                child.kill()
                child.communicate()
            with self._lock:
                self._children.discard(child.pid)
        if child.returncode == 0:
            return _answer(json.loads(answer), limits)
        if late or child.returncode == -signal.SIGXCPU:  # the deadline, or its CPU seconds
            raise TooCostly(f"reading the file took more than {limits.seconds:g} s, the most "
                            "one import may take (its markup costs that much to decode, or the "
                            f"service is busy): {_SPLIT}")
        log.error("reading a library file failed (exit code %s): %s", child.returncode,
                  errors.decode("utf-8", "replace")[-2000:])
        raise RuntimeError(f"the library reader stopped (exit code {child.returncode})")


_SPLIT = "split it into smaller files and import each"


def _answer(found: dict[str, Any], limits: ParseLimits) -> ParsedLibrary:
    """The child's answer: the library read, or the error to raise."""
    if "refused" in found:
        code, message = found["refused"]["code"], found["refused"]["message"]
        raise _REFUSALS[code](message)
    if "memory" in found:
        raise TooCostly(f"reading the file needed more than {limits.memory // 2**20} MB, the "
                        f"most one import may use: {_SPLIT}")
    parsed = found["parsed"]
    return ParsedLibrary(
        entries=[LibraryEntry(**{**entry, "paper": Paper(**entry["paper"])})
                 for entry in parsed["entries"]],
        rejected=[LibraryRejection(**rejection) for rejection in parsed["rejected"]])


_default: BoundedParser | None = None
_default_lock = threading.Lock()


def parse_upload(text: str, fmt: LibraryFormat) -> ParsedLibrary:
    """``parse_library`` within the default ``ParseLimits``, sharing this process's children:
    how the service reads an uploaded file."""
    global _default
    with _default_lock:
        if _default is None:
            _default = BoundedParser()
    return _default.parse(text, fmt)


def _child(argv: list[str]) -> int:
    """The child: its limits first, then the file from stdin, and one answer."""
    fmt, seconds, memory = argv
    assert fmt in FORMATS
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever else is printed goes to stderr, not into the answer
    resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
    cpu = int(float(seconds)) + 1  # SIGXCPU a second past the deadline, SIGKILL one more
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Last, so that a child at nice 19 has its limits. Where Linux groups the processes of a
    # session to share the CPU between sessions (autogroup), nice only orders the processes
    # of one group, and a busy child would make its group, the service's, wait its turn
    # behind the machine's other sessions: so the child leads a session of its own (Popen)
    # and gives that group nice 19 too.
    os.nice(NICE - os.nice(0))
    with contextlib.suppress(OSError):  # no autogroups on this system
        Path("/proc/self/autogroup").write_text(str(NICE))
    try:
        text = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
        found = json.dumps({"parsed": dataclasses.asdict(parse_library(text, fmt))},
                           ensure_ascii=False)
    except PaperrecError as exc:
        found = json.dumps({"refused": {"code": exc.code, "message": exc.message}})
    except MemoryError:
        found = json.dumps({"memory": True})
    except Exception:  # a bug: the parent logs it and answers 500
        traceback.print_exc()
        return 1
    answer.write(found)
    answer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1:]))

"""The sending side of ``benchmarks.hostile_requests``: hostile files and bodies, a request
sent over a raw socket (so that a body the server refuses half-way is still answered), and
what the server's processes use meanwhile (resident memory, sampled; CPU seconds).

The files are the costliest we found within the upload limits (10 MB, 20,000 entries, each
field's length), for BibTeX especially: accents nested in braces, @string macros at the
field limits, the markup pylatexenc is slowest on; and a real-looking export (a Zotero-like
BibTeX file, its abstracts full of math), the costliest file a reader may honestly send.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psutil

MB = 2**20


def _fill(pattern: str, length: int) -> str:
    return (pattern * (length // len(pattern) + 1))[:length]


def _entries(entry: str, size: int, limit: int = 20_000) -> str:
    """``entry`` (with ``%d`` for its key) as many times as ``size`` bytes hold."""
    out: list[str] = []
    total = 0
    while total + len(entry) + 6 <= size and len(out) < limit:
        out.append(entry % len(out))
        total += len(out[-1])
    return "".join(out)


def nested_accents(size: int) -> str:
    """Titles of one accent nested 400 braces deep: every brace costs bibtexparser and the
    reading step a step of Python."""
    return _entries("@article{k%d,\n title = {" + "{" * 400 + r"\'e" + "}" * 400 + "}\n}\n",
                    size)


def dense_accents(size: int) -> str:
    """The reported attack: titles and abstracts of accents, at their length limits."""
    accents = r"\'{e}\"{o}"
    return _entries("@article{k%d,\n title = {" + _fill(accents, 990) + "},\n abstract = {"
                    + _fill(accents, 19_990) + "}\n}\n", size)


def slowest_markup(size: int) -> str:
    """What pylatexenc decodes slowest (nested accents, empty math scripts), at the limits."""
    return _entries("@article{k%d,\n title = {" + _fill(r"\'{\'{\'{\'{e}}}}", 990)
                    + "},\n abstract = {" + _fill("$^{}_{}$", 19_990) + "}\n}\n", size)


def string_macros(size: int) -> str:
    """20,000 entries of 40 bytes, each naming @string macros at the field limits: 3 GB of
    text once expanded, a third of it markup pylatexenc decodes."""
    macros = ("@string{t = {" + _fill(r"\'{ab}", 990) + "}}\n@string{a = {"
              + _fill("$x$ ", 19_990) + "}}\n@string{p = {"
              + " and ".join(_fill(r"\'{ab}", 290) for _ in range(499)) + "}}\n")
    return macros + _entries("@a{k%d,title=t,abstract=a,author=p}\n", size - len(macros))


def csl_objects(size: int) -> str:
    """A CSL-JSON array of empty objects: 3.5 million in 10 MB, 290 MB to parse."""
    return "[" + "{}," * (size // 3 - 1) + "{}]"


HOSTILE_FILES: dict[str, tuple[Callable[[int], str], str]] = {
    "bibtex, accents nested in braces": (nested_accents, "application/x-bibtex"),
    "bibtex, dense accents at the field limits": (dense_accents, "application/x-bibtex"),
    "bibtex, the slowest markup at the field limits": (slowest_markup, "application/x-bibtex"),
    "bibtex, @string macros at the field limits": (string_macros, "application/x-bibtex"),
    "csl-json, millions of objects": (csl_objects, "application/vnd.citationstyles.csl+json"),
}

_WORDS = ["graph", "neural", "network", "learning", "model", "data", "training", "robust",
          "sparse", "attention", "transformer", "kernel", "bayesian", "inference", "optimal",
          "transport", "diffusion", "policy", "gradient", "reward", "language", "retrieval"]
_NAMES = [r"M{\"u}ller, J{\"o}rg", "Smith, Jane", r"Garc{\'i}a, Ana", r"Nguy{\~{\^e}}n, Van",
          r"Dvo{\v{r}}{\'a}k, Tom{\'a}{\v{s}}", "Lee, Kim", "{van der Berg}, Piet",
          r"Br{\aa}ten, Eva"]
_CLAUSES = [r" with $O(n \log n)$ cost", r" by 12\%", " on {ImageNet}", r" for Schr{\"o}dinger",
            r" in $\mathbb{R}^d$", "", ""]


def real_looking_export(size: int, abstract: int = 1500) -> str:
    """A Zotero-like BibTeX export: braced title words, accented names, abstracts of about
    ``abstract`` characters with math, escapes and accents in every other sentence."""
    rng = random.Random(0)

    def words(count: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(count))

    out: list[str] = []
    total = 0
    while len(out) < 20_000:
        title = " ".join("{" + w.capitalize() + "}" if rng.random() < 0.4 else w
                         for w in words(8).split())
        sentences: list[str] = []
        while sum(map(len, sentences)) < abstract:
            sentences.append(words(12) + rng.choice(_CLAUSES) + ".")
        entry = (f"@article{{key{len(out)},\n\ttitle = {{{title}}},\n\tauthor = "
                 f"{{{' and '.join(rng.sample(_NAMES, 6))}}},\n\tabstract = "
                 f"{{{' '.join(sentences)}}},\n\tjournal = {{Advances in Neural Information "
                 f"Processing Systems}},\n\tyear = {{2021}},\n\tdoi = {{10.1000/x.{len(out)}}},"
                 f"\n\turl = {{https://example.org/paper/{len(out)}}},\n\tpages = {{1--12}},\n"
                 f"\tkeywords = {{{words(5)}}},\n}}\n\n")
        if total + len(entry) > size:
            break
        out.append(entry)
        total += len(entry)
    return "".join(out)


def repeated(chunk: bytes, total: int) -> Iterator[bytes]:
    """``total`` bytes, ``chunk`` after ``chunk`` (made as they are sent)."""
    for _ in range(total // len(chunk)):
        yield chunk


@dataclass
class Answer:
    status: int = 0
    seconds: float = 0.0
    body: bytes = b""
    sent: int = 0  # bytes of the body sent before the answer came (or the server closed)


def send(url: str, method: str, path: str, headers: dict[str, str], body: Iterable[bytes],
         length: int | None = None, timeout: float = 600) -> Answer:
    """One request on a fresh connection, its body ``length`` bytes long (None: chunked),
    sent by a thread while this one waits for the answer: a server that answers (413) before
    reading the whole body is heard, and sending stops."""
    host, port = url.split("://", 1)[1].split(":")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    framing = {"Content-Length": str(length)} if length is not None else {
        "Transfer-Encoding": "chunked"}
    head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{host}:{port}", **headers, **framing,
                                               "Connection": "close"}.items())
    answer, stop = Answer(), threading.Event()

    def sender() -> None:
        try:
            sock.sendall(f"{method} {path} HTTP/1.1\r\n{head}\r\n".encode("latin-1"))
            for chunk in body:
                if stop.is_set():
                    return
                sock.sendall(chunk if length is not None else
                             b"%x\r\n%s\r\n" % (len(chunk), chunk))
                answer.sent += len(chunk)
            if length is None:
                sock.sendall(b"0\r\n\r\n")
        except OSError:  # the server answered and closed: what it read is what counts
            pass

    started = time.perf_counter()
    thread = threading.Thread(target=sender, daemon=True)
    thread.start()
    received = b""
    try:
        while True:
            data = sock.recv(1 << 16)
            if not data:
                break
            received += data
    except OSError:
        pass
    answer.seconds = time.perf_counter() - started
    stop.set()
    sock.close()
    thread.join()
    if received.startswith(b"HTTP/"):
        answer.status = int(received.split(b" ", 2)[1])
        answer.body = received.split(b"\r\n\r\n", 1)[-1]
    return answer


@dataclass
class Usage:
    """The server's processes (master, workers, the workers' children) while it runs:
    ``peak_mib`` the most resident memory of them all together, ``peak_child_mib`` of one
    child (a file being read)."""

    pids: Callable[[], list[int]]
    every: float = 0.05
    peak_mib: float = 0.0
    peak_child_mib: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Usage:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            total = 0.0
            for pid in self.pids():
                try:
                    process = psutil.Process(pid)
                    rss = process.memory_info().rss / MB
                    if "bounded_parse" in " ".join(process.cmdline()):
                        self.peak_child_mib = max(self.peak_child_mib, rss)
                except psutil.Error:
                    continue
                total += rss
            self.peak_mib = max(self.peak_mib, total)
            self._stop.wait(self.every)


def cpu_seconds(pids: list[int]) -> float:
    """CPU seconds of these processes and of their children that have exited (counted in
    their parents once reaped)."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total

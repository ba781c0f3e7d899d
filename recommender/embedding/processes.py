"""Embedding in worker processes, one per core (``PAPERREC_EMBED_PROCESSES``, default 1: off).

Why processes: one per core, each running whole batches on a single-threaded session of its
own. Measured on 2 shared cores (docs/benchmarks/embedding.md) they do not pay: the
process itself runs its batches the same way, on one thread per core sharing one session
(``OnnxEncoder.encode``), without starting interpreters or loading the model again, hence
off by default; machines with many cores, where one process's threads contend for the GIL
between batches, may gain from them.

This process tokenizes and cuts the batches exactly as ``Embedder.encode`` does; the workers
only run the ONNX session on them. So the vectors are those of the in-process path: int8
activations are quantised per batch, and the batches are the same, whichever process runs
them. Each worker is a fresh interpreter (spawn: the parent's tokenizer and ONNX threads are
not forked) that loads the exported model once, ignores Ctrl-C (the parent stops it), and runs
batches until the pool is closed. The texts of two chunks are in flight at a time, so the
workers never wait for the parent to store a chunk.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import numpy as np

from recommender.core.errors import EmbeddingFailed
from recommender.embedding.encoders import Embedder, Feeds, OnnxEncoder, OnnxSession, TextEncoder

# Texts of fewer characters than this in all are embedded in this process: about 4 s of
# work for one process (some 40k characters a second a core, abstracts or titles), where
# starting the workers (1 to 3 s on a busy machine: an interpreter, ONNX Runtime and the
# model each) would cost about as much as they save.
MIN_CHARACTERS = 200_000

_session: OnnxSession | None = None  # in a worker: its one single-threaded session

EncodeChunks = Callable[[Iterable[list[str]]], Iterator[np.ndarray]]


@contextmanager
def chunk_encoder(embedder: TextEncoder, processes: int,
                  characters: int) -> Iterator[EncodeChunks]:
    """How to embed texts of ``characters`` characters in all, chunk by chunk: in
    ``processes`` worker processes when there are more than one, the embedder is an ONNX one
    and the texts are enough to pay for starting them; else in this process (the same
    vectors either way)."""
    if (processes > 1 and characters >= MIN_CHARACTERS and isinstance(embedder, Embedder)
            and embedder.backend != "torch"):
        with EmbeddingProcesses(embedder, processes) as pool:
            yield pool.encode_chunks
    else:
        yield lambda chunks: map(embedder.encode, chunks)


def _start_worker(directory: str) -> None:
    global _session
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _session = OnnxSession(Path(directory))


def _run(feeds: Feeds) -> np.ndarray:
    assert _session is not None, "not started by EmbeddingProcesses"
    return _session.run(feeds)


class EmbeddingProcesses:
    """``processes`` worker processes running an ONNX ``Embedder``'s batches. Use as a
    context manager: leaving it (also by Ctrl-C or an error) cancels what is queued and
    waits for the workers to exit."""

    def __init__(self, embedder: Embedder, processes: int) -> None:
        encoder = embedder.loaded()
        if not isinstance(encoder, OnnxEncoder):
            raise ValueError(f"worker processes run ONNX backends, not {embedder.backend!r}")
        self.encoder = encoder
        self.batch_size = embedder.batch_size
        self.pool = ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker, initargs=(str(encoder.directory),))

    def __enter__(self) -> EmbeddingProcesses:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def encode_chunks(self, chunks: Iterable[list[str]]) -> Iterator[np.ndarray]:
        """Each chunk's unit vectors in its texts' order, chunk by chunk, the same as
        ``embedder.encode(chunk)`` would give. EmbeddingFailed if a worker died."""
        in_flight: deque[tuple[int, list[tuple[np.ndarray, Future[np.ndarray]]]]] = deque()
        for chunk in chunks:
            in_flight.append((len(chunk), self._submit(chunk)))
            if len(in_flight) > 1:
                yield self._collect(*in_flight.popleft())
        while in_flight:
            yield self._collect(*in_flight.popleft())

    def _submit(self, texts: list[str]) -> list[tuple[np.ndarray, Future[np.ndarray]]]:
        try:
            return [(rows, self.pool.submit(_run, feeds))
                    for rows, feeds in self.encoder.batches(texts, self.batch_size)]
        except BrokenProcessPool as exc:
            raise _failed(exc) from None

    def _collect(self, size: int,
                 batches: list[tuple[np.ndarray, Future[np.ndarray]]]) -> np.ndarray:
        out = np.empty((size, self.encoder.dimension), dtype=np.float32)
        try:
            for rows, future in batches:
                out[rows] = future.result()
        except BrokenProcessPool as exc:
            raise _failed(exc) from None
        return out


def _failed(exc: BrokenProcessPool) -> EmbeddingFailed:
    return EmbeddingFailed(
        f"an embedding worker process stopped ({exc}); the papers embedded so far are "
        f"cached: run the command again, or set PAPERREC_EMBED_PROCESSES=1 to embed in "
        f"this process")

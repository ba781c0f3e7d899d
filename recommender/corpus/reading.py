"""Reading paper files for an ingest, in child processes when they are large.

An ingest does two kinds of work per record: reading it (parsing the line, cleaning the
markup, folding words, the identity keys, the compressed record: ``store.prepare``), about
two thirds of its time, and writing it (SQLite, the keyword index), the rest. The machine
has two cores. ``read_prepared`` has ``READERS`` child processes read while the caller
writes: JSON Lines files are cut in blocks of ``CHUNK`` lines, reader i taking every
``READERS``-th block from the i-th, and the caller takes the blocks back in file order, so
the records reach the store in the order of the files (the first record of a paper is the
one stored; deduplication is the store's, exact as ever). Other formats (CSV, paper lists)
are read by one child, whole. Each reader's queue holds at most ``AHEAD`` blocks, so readers
faster than the writer wait instead of filling memory.

Why processes and not threads: the reading is Python (the GIL). Why two readers for one
writer: reading is the larger share, and three processes on two cores keep both busy.
Small inputs (under ``PROCESS_FROM_BYTES``) are read in the caller: a child costs about
half a second to start. Children are spawned, not forked: the writer holds SQLite and
tantivy handles and their threads, which a fork would copy mid-use.
"""

from __future__ import annotations

import multiprocessing
import queue
import traceback
from collections.abc import Iterator, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from recommender.core.papers import Rejection
from recommender.corpus.formats import is_jsonl, jsonl_blocks, jsonl_item, read_papers
from recommender.corpus.store import Prepared, prepare

READERS = 2  # child processes reading JSON Lines
CHUNK = 1000  # lines a block
AHEAD = 8  # blocks a reader may have read ahead of the writer
PROCESS_FROM_BYTES = 16_000_000  # about 10,000 arXiv records: below, read in the caller

Item = Prepared | Rejection


def read_prepared(paths: Sequence[Path], readers: bool | None = None) -> Iterator[Item]:
    """Every record of the files, in order, prepared for the store (or its rejection).
    ``readers``: read in reader processes (True), in this one (False), or by the size of
    the files (None)."""
    if readers is None:
        readers = sum(_size(path) for path in paths) >= PROCESS_FROM_BYTES
    if not readers:
        yield from _read(paths)
        return
    parts = READERS if all(is_jsonl(path) for path in paths) else 1
    context = multiprocessing.get_context("spawn")
    queues = [context.Queue(maxsize=AHEAD) for _ in range(parts)]
    children = [context.Process(target=_child, args=([str(p) for p in paths], part, parts,
                                                     queues[part]),
                                name=f"paperrec-read-{part}", daemon=True)
                for part in range(parts)]
    for child in children:
        child.start()
    try:
        block = 0
        while (found := _next(queues[block % parts], children[block % parts], paths)
               ) is not None:
            yield from found
            block += 1
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
            child.join()
        for chunks in queues:
            chunks.close()


def _next(chunks: Any, child: BaseProcess, paths: Sequence[Path]) -> list[Item] | None:
    """The reader's next block; None when it has no more."""
    while True:
        try:
            message = chunks.get(timeout=5)
        except queue.Empty:
            if not child.is_alive():
                raise RuntimeError(f"the process reading {', '.join(map(str, paths))} "
                                   f"stopped (exit code {child.exitcode})") from None
            continue
        if isinstance(message, str):
            raise RuntimeError(f"reading {', '.join(map(str, paths))} failed:\n{message}")
        return message


def _read(paths: Sequence[Path]) -> Iterator[Item]:
    for path in paths:
        for item in read_papers(path):
            yield item if isinstance(item, Rejection) else prepare(item)


def _share(paths: Sequence[Path], part: int, parts: int) -> Iterator[list[Item]]:
    """Reader ``part`` of ``parts``: its blocks of the files' lines, prepared (one reader:
    every record, in blocks)."""
    if parts == 1:
        block: list[Item] = []
        for item in _read(paths):
            block.append(item)
            if len(block) >= CHUNK:
                yield block
                block = []
        yield block
        return
    number = 0
    for path in paths:
        source = str(path)
        for first, lines in jsonl_blocks(path, CHUNK):
            if number % parts == part:
                items = (jsonl_item(line, source, first + i) for i, line in enumerate(lines))
                yield [item if isinstance(item, Rejection) else prepare(item)
                       for item in items if item is not None]
            number += 1


def _child(paths: list[str], part: int, parts: int, chunks: Any) -> None:
    """A reading process: its blocks, then None (or a traceback, if it failed)."""
    try:
        for block in _share([Path(p) for p in paths], part, parts):
            chunks.put(block)
        chunks.put(None)
    except BaseException:  # noqa: BLE001 - any failure is the writer's to report
        chunks.put(traceback.format_exc())


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # read_papers reports it

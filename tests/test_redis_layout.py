"""The key layout that one server, Sentinel and Redis Cluster share, and the move of an older
deployment's keys into it, on a real Redis."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from redis.crc import key_slot

from recommender.core.errors import InvalidInput
from recommender.digest.subscriptions import SubscriptionStore
from recommender.feedback.layout import migrate_layout
from recommender.feedback.store import FeedbackStore
from recommender.storage.redis_keys import BUCKETS, LAYOUT_VERSION, RedisKeys, bucket_of
from service.cli import main

USERS = ["ada", "bob", "carol@example.org", "d.e-f_g+h", "u0000017", "x" * 128]


@pytest.mark.parametrize("user", USERS)
def test_every_key_one_user_write_touches_is_in_one_slot(user: str) -> None:
    keys = RedisKeys("paperrec")
    slots = {key_slot(key.encode()) for key in keys.user_write_keys(user)}
    assert len(slots) == 1, keys.user_write_keys(user)


def test_users_spread_over_every_bucket() -> None:
    buckets = {bucket_of(f"u{n:07d}") for n in range(5_000)}
    assert buckets == set(range(BUCKETS))
    slots = {key_slot(RedisKeys().like_counts(b).encode()) for b in range(BUCKETS)}
    assert len(slots) == BUCKETS  # one slot per bucket, none shared


def test_a_namespace_with_a_brace_is_refused() -> None:
    with pytest.raises(InvalidInput, match="braces"):
        RedisKeys("paper{rec}")


def _old_deployment(client: redis.Redis, ns: str) -> None:
    """Keys as paperrec wrote them before the layout had buckets."""
    client.hset(f"{ns}:user:ada:feedback", mapping={"p1": "like:1.000", "p2": "dislike:2.000"})
    client.hset(f"{ns}:user:bob:feedback", mapping={"p1": "like:3.000", "p3": "like:4.000"})
    client.zadd(f"{ns}:user:ada:served", {"p9": 5.0})
    client.hset(f"{ns}:user:bob:subscription", mapping={
        "email": "bob@example.org", "frequency": "weekly", "max_items": 10,
        "created_at": 6.0})
    client.sadd(f"{ns}:users", "ada", "bob")
    client.sadd(f"{ns}:subscribers", "bob")
    client.zadd(f"{ns}:like_counts", {"p1": 2, "p3": 1})


def test_an_older_deployment_is_moved_into_the_buckets(redis_url: str, namespace: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    _old_deployment(client, namespace)
    keys = RedisKeys(namespace)

    summary = migrate_layout(client, keys)

    assert (summary.keys_moved, summary.users, summary.liked_papers) == (4, 2, 2)
    feedback, subscriptions = FeedbackStore(client, keys), SubscriptionStore(client, keys)
    assert [(f.paper_id, f.signal) for f in feedback.get("ada")] == [("p1", "like"),
                                                                    ("p2", "dislike")]
    assert feedback.for_list("ada").served == {"p9": 5.0}
    assert feedback.like_counts() == {"p1": 2, "p3": 1}
    assert sorted(feedback.users()) == ["ada", "bob"]
    assert list(subscriptions.subscribers()) == ["bob"]
    assert subscriptions.get("bob") is not None
    leftover = set(client.scan_iter(f"{namespace}:*")) - {keys.layout}
    assert all(key.startswith(f"{namespace}:{{b") for key in leftover), leftover
    assert client.get(keys.layout) == LAYOUT_VERSION
    # After the move the stores write in the new layout, and the counts stay right.
    feedback.set("ada", "p3", "like", 7.0)
    feedback.erase_user("bob")
    assert feedback.like_counts() == {"p1": 1, "p3": 1}
    assert list(subscriptions.subscribers()) == []


def test_the_move_finishes_when_run_again_and_then_does_nothing(redis_url: str,
                                                                namespace: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    _old_deployment(client, namespace)
    keys = RedisKeys(namespace)
    # A first run stopped after moving ada's feedback hash only.
    client.rename(f"{namespace}:user:ada:feedback", keys.feedback("ada"))

    assert migrate_layout(client, keys).keys_moved == 3
    assert FeedbackStore(client, keys).like_counts() == {"p1": 2, "p3": 1}
    again = migrate_layout(client, keys)
    assert again.already_done and again.keys_moved == 0
    assert FeedbackStore(client, keys).like_counts() == {"p1": 2, "p3": 1}


def test_paperrec_migrate_redis_moves_the_keys_once(
    redis_url: str, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    _old_deployment(client, namespace)
    for variable, value in {"PAPERREC_DATA_DIR": str(tmp_path), "REDIS_URL": redis_url,
                            "PAPERREC_REDIS_NAMESPACE": namespace}.items():
        monkeypatch.setenv(variable, value)

    assert main(["migrate-redis"]) == 0
    assert "4 keys moved; 2 users, 2 liked papers counted" in capsys.readouterr().out
    assert main(["migrate-redis"]) == 0
    assert capsys.readouterr().out == ""  # already done: nothing to say
    assert FeedbackStore(client, RedisKeys(namespace)).like_counts() == {"p1": 2, "p3": 1}


def test_a_key_moved_by_another_process_meanwhile_is_skipped(
    redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    _old_deployment(client, namespace)
    keys = RedisKeys(namespace)
    other = redis.Redis.from_url(redis_url, decode_responses=True)
    real_rename = client.rename

    def rename_after_the_other(source: str, target: str) -> object:
        if source.endswith(":user:ada:feedback"):  # the other process got there first
            other.rename(source, target)
        return real_rename(source, target)

    monkeypatch.setattr(client, "rename", rename_after_the_other)
    assert migrate_layout(client, keys).keys_moved == 3
    assert FeedbackStore(client, keys).like_counts() == {"p1": 2, "p3": 1}

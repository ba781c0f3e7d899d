"""FeedbackStore against a real Redis server."""

from __future__ import annotations

import pytest
import redis

from recommender.core.errors import InvalidInput, StoreUnavailable
from recommender.feedback.store import FeedbackStore
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_options import client_options


@pytest.fixture
def store(redis_url: str, namespace: str) -> FeedbackStore:
    return FeedbackStore(redis.Redis.from_url(redis_url, decode_responses=True),
                         RedisKeys(namespace))


def test_likes_and_dislikes_are_kept_with_their_time(store: FeedbackStore) -> None:
    assert store.set("ada", "p1", "like", at=100.0) is False
    assert store.set("ada", "p2", "dislike", at=200.5) is False
    got = [(f.paper_id, f.signal, f.at) for f in store.get("ada")]
    assert got == [("p1", "like", 100.0), ("p2", "dislike", 200.5)]
    assert store.get("bob") == []


def test_a_new_signal_on_the_same_paper_replaces_the_old(store: FeedbackStore) -> None:
    store.set("ada", "p1", "like", at=100.0)
    assert store.set("ada", "p1", "dislike", at=150.0) is True
    assert [(f.paper_id, f.signal, f.at) for f in store.get("ada")] == [("p1", "dislike", 150.0)]


def test_a_signal_can_be_removed(store: FeedbackStore) -> None:
    store.set("ada", "p1", "like", at=100.0)
    assert store.remove("ada", "p1") is True
    assert store.remove("ada", "p1") is False
    assert store.get("ada") == []


def test_like_counts_follow_every_change(store: FeedbackStore) -> None:
    store.set("ada", "p1", "like", at=1.0)
    store.set("bob", "p1", "like", at=2.0)
    store.set("bob", "p2", "like", at=3.0)
    store.set("ada", "p1", "like", at=4.0)  # same signal again: still one like from ada
    assert store.like_counts() == {"p1": 2, "p2": 1}
    store.set("bob", "p1", "dislike", at=5.0)
    store.remove("bob", "p2")
    assert store.like_counts() == {"p1": 1}
    assert sorted(store.users()) == ["ada", "bob"]


def test_a_signal_must_be_like_or_dislike(store: FeedbackStore) -> None:
    with pytest.raises(InvalidInput, match='"like" or "dislike"'):
        store.set("ada", "p1", "love", at=1.0)  # type: ignore[arg-type]
    assert store.get("ada") == []


def test_an_unreachable_redis_is_reported_as_unavailable(
    namespace: str, unreachable_redis_url: str
) -> None:
    # A client as the service makes one: it fails at once, without redis-py's default retries.
    dead = redis.Redis.from_url(unreachable_redis_url, **client_options())
    store = FeedbackStore(dead, RedisKeys(namespace))
    with pytest.raises(StoreUnavailable, match="unreachable"):
        store.get("ada")
    with pytest.raises(StoreUnavailable):
        store.set("ada", "p1", "like", at=1.0)


def test_served_papers_are_remembered_with_when_first_served(store: FeedbackStore) -> None:
    store.record_served("ada", ["p1", "p2"], at=10.0)
    store.record_served("ada", ["p3", "p1"], at=20.0)  # p1 again: it keeps its first time
    assert store.for_list("ada").served == {"p1": 10.0, "p2": 10.0, "p3": 20.0}
    assert list(store.for_list("ada").served) == ["p1", "p2", "p3"]  # oldest first, ties by id
    assert store.for_list("bob").served == {}


def test_not_now_sets_a_paper_aside_until_it_is_put_back(store: FeedbackStore) -> None:
    store.set_aside("ada", "p1", at=10.0)
    store.set_aside("ada", "p2", at=20.0)
    assert store.for_list("ada").set_aside == ["p1", "p2"]
    store.set("ada", "p3", "like", at=30.0)
    assert store.marks("ada", ["p2", "p3", "p4"]) == {"p2": "set-aside", "p3": "like"}
    assert store.for_list("ada").served == {}  # set aside is not served
    assert store.put_back("ada", "p1") and not store.put_back("ada", "p1")
    assert store.set_aside_with_times("ada") == [("p2", 20.0)]
    assert store.for_list("bob").set_aside == []
    with pytest.raises(InvalidInput):
        store.set_aside("ada", "bad id\n", at=1.0)


def test_a_lists_read_gives_the_same_marks_as_reading_them(store: FeedbackStore) -> None:
    """The list page shows what the reader did with its papers from the read the list was
    made from (``ListState.marks``): the same as ``marks``, a rating over a set-aside."""
    store.set_aside("ada", "p1", at=10.0)
    store.set_aside("ada", "p2", at=11.0)
    store.set("ada", "p2", "dislike", at=12.0)
    store.set("ada", "p3", "like", at=13.0)
    store.set("ada", "p5", "like", at=14.0)
    ids = ["p1", "p2", "p3", "p4"]
    assert store.for_list("ada").marks(ids) == store.marks("ada", ids) == {
        "p1": "set-aside", "p2": "dislike", "p3": "like"}


def test_the_served_history_stops_at_its_cap_keeping_the_newest(
    redis_url: str, namespace: str
) -> None:
    store = FeedbackStore(redis.Redis.from_url(redis_url, decode_responses=True),
                          RedisKeys(namespace), served_history_max=5)
    store.record_served("ada", ["p1", "p2", "p3"], at=10.0)
    store.record_served("ada", ["p4", "p5"], at=20.0)
    def served() -> list[str]:
        return list(store.for_list("ada").served)

    assert served() == ["p1", "p2", "p3", "p4", "p5"]  # at the cap
    store.record_served("ada", ["p6", "p7"], at=30.0)
    assert served() == ["p3", "p4", "p5", "p6", "p7"]  # the two oldest went
    store.record_served("ada", ["p3"], at=40.0)  # served again: it keeps when it was first
    assert served() == ["p3", "p4", "p5", "p6", "p7"]
    store.record_served("ada", [f"q{i}" for i in range(8)], at=50.0)  # more than the cap at once
    assert served() == ["q3", "q4", "q5", "q6", "q7"]
    assert store.for_list("bob").served == {}


def test_the_served_history_cap_must_keep_something(redis_url: str) -> None:
    with pytest.raises(InvalidInput, match="at least 1"):
        FeedbackStore(redis.Redis.from_url(redis_url), RedisKeys("x"), served_history_max=0)


def test_likes_by_user_is_the_training_data(store: FeedbackStore) -> None:
    store.set("ada", "p1", "like", at=1.0)
    store.set("ada", "p2", "dislike", at=2.0)
    store.set("bob", "p2", "like", at=3.0)
    assert store.likes_by_user() == {"ada": ["p1"], "bob": ["p2"]}

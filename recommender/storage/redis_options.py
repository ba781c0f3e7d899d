"""How we reach Redis: an external server through ``REDIS_URL``, or an embedded one.

Either way the client fails fast when Redis is down: a connect gives up after 1 s, a reply
after 3 s, and nothing is retried, so a dead or hung Redis turns a request into a 503 within
seconds instead of holding it (redis-py's default for a client it builds itself is ten
retries with backoff), and no command is ever sent twice (a transaction whose reply was lost
would apply twice). When Redis is back, the next request reconnects, with no restart: the
pool replaces a connection that Redis closed before handing it out.

A Redis Cluster client is the exception: after a node fails it must read the map of slots
again and send the command to the new primary, so it retries ``CLUSTER_RETRIES`` times, at
once, each time after asking the cluster where the slot lives now (redis-py's cluster retry).
Our writes are idempotent scripts (recommender/storage/redis_writes.py), so a command sent
twice leaves the same state; a dead cluster still answers 503 within seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from recommender.core.errors import StoreUnavailable

log = logging.getLogger("paperrec.redis")

SOCKET_TIMEOUT = 3.0  # seconds to wait for a reply
CONNECT_TIMEOUT = 1.0  # seconds to wait for a connection
HEALTH_CHECK_SECONDS = 30  # an idle pooled connection is pinged before use
CLUSTER_RETRIES = 2


def client_options() -> dict[str, Any]:
    """Timeouts and retries for every client of ours (see the module docstring)."""
    return {
        "decode_responses": True,
        "retry": Retry(NoBackoff(), 0),
        "health_check_interval": HEALTH_CHECK_SECONDS,
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
    }


def cluster_options() -> dict[str, Any]:
    """The same for a ``RedisCluster``: its retry is of the whole command, after the slots
    were read again (its nodes' own connections never retry)."""
    return {**client_options(), "retry": Retry(NoBackoff(), CLUSTER_RETRIES)}


# What a Redis client raises when Redis cannot serve a command (a Cluster client also raises
# RedisClusterException, which is not a RedisError, e.g. when no node answers).
REDIS_FAILURES = (redis.RedisError, RedisClusterException)


@contextmanager
def redis_errors() -> Iterator[None]:
    # What Redis said (a socket path, a host, a command) goes to the log, for the operator;
    # the answer a reader gets says only what to do.
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        log.warning("Redis unreachable: %s", exc)
        raise StoreUnavailable(
            "the feedback store (Redis) is unreachable; retry shortly") from exc
    except REDIS_FAILURES as exc:
        log.warning("Redis failed: %s", exc)
        raise StoreUnavailable("the feedback store (Redis) failed; retry shortly") from exc

"""How we reach Redis: an external server through ``REDIS_URL``, or an embedded one.

Either way the client fails fast when Redis is down: a connect gives up after 1 s, a reply
after 3 s, and nothing is retried, so a dead or hung Redis turns a request into a 503 within
seconds instead of holding it (redis-py's default for a client it builds itself is ten
retries with backoff), and no command is ever sent twice (a transaction whose reply was lost
would apply twice). When Redis is back, the next request reconnects, with no restart: the
pool replaces a connection that Redis closed before handing it out.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from recommender.core.errors import StoreUnavailable

SOCKET_TIMEOUT = 3.0  # seconds to wait for a reply
CONNECT_TIMEOUT = 1.0  # seconds to wait for a connection
HEALTH_CHECK_SECONDS = 30  # an idle pooled connection is pinged before use


def client_options() -> dict[str, Any]:
    """Timeouts and retries for every client of ours (see the module docstring)."""
    return {
        "decode_responses": True,
        "retry": Retry(NoBackoff(), 0),
        "health_check_interval": HEALTH_CHECK_SECONDS,
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
    }


@contextmanager
def redis_errors() -> Iterator[None]:
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise StoreUnavailable(
            f"the feedback store (Redis) is unreachable: {exc}; retry shortly"
        ) from exc
    except redis.RedisError as exc:
        raise StoreUnavailable(f"the feedback store (Redis) failed: {exc}") from exc

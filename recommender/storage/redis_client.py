"""Connect to the configured Redis: an external server (REDIS_URL, also through Sentinels)
or the embedded one in the data dir."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

import redis

from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.storage.embedded_redis import EmbeddedRedis
from recommender.storage.redis_options import client_options


def connect(settings: Settings) -> redis.Redis:
    """A client for the configured Redis. Connections are made lazily, on first use."""
    if settings.redis_url.startswith(SENTINEL_SCHEME):
        return _through_sentinels(settings.redis_url)
    if settings.redis_url:
        return redis.Redis.from_url(settings.redis_url, **client_options())
    return redis.Redis(connection_pool=EmbeddedRedis(settings.redis_dir).pool)


SENTINEL_SCHEME = "redis+sentinel://"


def _through_sentinels(url: str) -> redis.Redis:
    """``redis+sentinel://[:password@]host:26379[,host2:26379...]/<primary name>[/<db>]``:
    the primary the Sentinels name, found again by them after a failover."""
    from redis.sentinel import Sentinel

    parsed = urlsplit(url)
    hosts = parsed.netloc.rpartition("@")[2]
    parts = [part for part in parsed.path.split("/") if part]
    if not hosts or not parts:
        raise InvalidInput(f"REDIS_URL {url!r}: expected redis+sentinel://host:26379[,host:26379]"
                           f"/<primary name>[/<db>]")
    sentinels = [(host.rpartition(":")[0] or host, int(host.rpartition(":")[2] or 26379))
                 for host in hosts.split(",")]
    options = client_options()
    password = unquote(parsed.password) if parsed.password else None
    sentinel = Sentinel(sentinels, socket_timeout=options["socket_timeout"],
                        socket_connect_timeout=options["socket_connect_timeout"])
    return sentinel.master_for(parts[0], db=int(parts[1]) if len(parts) > 1 else 0,
                               password=password, **options)



"""Connect to the configured Redis: an external server (REDIS_URL, also through Sentinels or
as a Redis Cluster) or the embedded one in the data dir."""

from __future__ import annotations

from typing import cast
from urllib.parse import unquote, urlsplit

import redis

from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.storage.embedded_redis import EmbeddedRedis
from recommender.storage.redis_options import client_options, cluster_options, redis_errors


def connect(settings: Settings) -> redis.Redis:
    """A client for the configured Redis. Connections are made lazily, on first use, except
    that a Cluster client reads the cluster's map of slots at once."""
    if settings.redis_url.startswith(SENTINEL_SCHEME):
        return _through_sentinels(settings.redis_url)
    if settings.redis_url.startswith(CLUSTER_SCHEME):
        return _cluster(settings.redis_url)
    if settings.redis_url:
        return redis.Redis.from_url(settings.redis_url, **client_options())
    return redis.Redis(connection_pool=EmbeddedRedis(settings.redis_dir).pool)


SENTINEL_SCHEME = "redis+sentinel://"
CLUSTER_SCHEME = "redis+cluster://"


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


def _cluster(url: str) -> redis.Redis:
    """``redis+cluster://[[user]:password@]host:port[,host:port...]``: a Redis Cluster, its
    map of slots read here, from the first of these nodes that answers (redis-py reads it when
    the client is made, so unlike the other forms this one connects at once), and read again
    when a node fails or a slot moves. A ``RedisCluster`` answers the commands we use as a
    ``Redis`` does, so it is typed as one."""
    from redis.cluster import ClusterNode, RedisCluster

    parsed = urlsplit(url)
    credentials, _, hosts = parsed.netloc.rpartition("@")
    nodes = [host.rpartition(":") for host in hosts.split(",") if host]
    if not nodes or parsed.path.strip("/") or any(not h or not p.isdigit() for h, _, p in nodes):
        raise InvalidInput(f"REDIS_URL {url!r}: expected redis+cluster://host:port[,host:port]"
                           f" (any nodes of the cluster; no database number)")
    user, _, password = credentials.rpartition(":")
    with redis_errors():
        client = RedisCluster(
            startup_nodes=[ClusterNode(host, int(port)) for host, _, port in nodes],
            username=unquote(user) or None, password=unquote(password) or None,
            **cluster_options())
    return cast(redis.Redis, client)

"""UserWrites: how a write to one user's keys is made and acknowledged.

Every write about one user is one Lua script over keys in one slot (``RedisKeys``), so it is
done whole or not at all, on one server as on a Cluster node. On a Redis Cluster, replication
is asynchronous: a primary that crashes right after answering would lose the write when its
replica takes over. So there each script is followed, on the same connection, by
``WAIT <replicas> <timeout>``, and the write counts as done only when that many replicas have
it; otherwise ``StoreUnavailable`` (the API answers 503, the client retries). Every script is
idempotent (it sets a value, it does not add to one), so a retry after an unacknowledged
attempt leaves the same state. On one server or behind Sentinels the script is simply run
(the append-only file with fsync on every write is what keeps it there).

``WAIT`` counts the writes of its own connection. A script that changes nothing (removing a
signal that is not there) is acknowledged at once, even if the state it saw came from another
connection's write that no replica has yet: such a write was itself not acknowledged, or is
being waited for on its own connection.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.commands.core import Script
from redis.exceptions import MovedError, NoScriptError

from recommender.core.errors import StoreUnavailable
from recommender.storage.redis_options import redis_errors

WAIT_REPLICAS = 1  # replicas that must have a write on a Cluster before it is acknowledged
WAIT_MILLISECONDS = 1_000


class UserWrites:
    def __init__(self, client: redis.Redis, replicas: int = WAIT_REPLICAS,
                 wait_ms: int = WAIT_MILLISECONDS) -> None:
        """``replicas``: how many replicas must confirm each write on a Cluster (0: what the
        primary has is enough); on one server or behind Sentinels none are waited for."""
        self._client = client
        self.replicas = replicas if isinstance(client, RedisCluster) else 0
        self._wait_ms = wait_ms

    def register(self, source: str) -> Script:
        return self._client.register_script(source)

    def run(self, script: Script, keys: list[str], args: list[Any]) -> Any:
        """The script's reply, once the write is as safe as configured."""
        with redis_errors():
            if not self.replicas:
                return script(keys=keys, args=args)
            return self._acknowledged(script, keys, args)

    def _acknowledged(self, script: Script, keys: list[str], args: list[Any]) -> Any:
        # A second attempt only after the map of slots was read again (the first node was
        # gone or no longer serves the slot) or after the script was loaded on a new primary.
        for attempt in (1, 2):
            node = self._node_for(keys[0])
            pipe = node.pipeline(transaction=False)  # one connection: WAIT counts its writes
            pipe.evalsha(script.sha, len(keys), *keys, *args)
            pipe.execute_command("WAIT", self.replicas, self._wait_ms)
            try:
                reply, confirmed = pipe.execute()
            except NoScriptError:
                node.script_load(script.script)
                continue
            except (MovedError, redis.ConnectionError):
                self._refresh_slots()
                if attempt == 2:
                    raise
                continue
            if int(confirmed) < self.replicas:
                raise StoreUnavailable(
                    f"the write reached the Redis primary but only {confirmed} of "
                    f"{self.replicas} replicas confirmed it within {self._wait_ms} ms; retry")
            return reply
        raise StoreUnavailable("the Redis Cluster kept changing under the write; retry")

    def _node_for(self, key: str) -> redis.Redis:
        if isinstance(self._client, RedisCluster):
            node = self._client.get_node_from_key(key)
            return self._client.get_redis_connection(node)
        return self._client

    def _refresh_slots(self) -> None:
        if isinstance(self._client, RedisCluster):
            self._client.nodes_manager.initialize()

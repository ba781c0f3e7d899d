"""Embedding on a Dask distributed cluster: the texts missing from the cache, shard by shard.

Why Dask distributed and not Ray: ``distributed`` is a pure-Python wheel of a few MB on top of
the numpy stack paperrec already has (Ray is a platform wheel of tens of MB with its own object
store and dashboard processes); ``LocalCluster(n_workers=2, processes=True)`` starts a real
two-process cluster inside a test in seconds; ``dask scheduler`` and ``dask worker`` are the
whole deployment (compose profile ``cluster``); and its scheduler already does what a shard
job needs when a worker dies: the tasks that worker held are handed to another worker, so a
lost worker costs only the shard it was embedding (``retries`` covers a shard that raised).

``embed_on_cluster`` cuts the texts into shards (``PAPERREC_EMBED_SHARD_SIZE`` texts), sorted
by length and sliced as ``embed_into_cache`` slices its chunks; each task carries the model
name, backend, batch size and the shard's texts, and returns float32 vectors. A worker builds
the model once (``shared_embedder``: one per process) and keeps it for every later shard;
nothing of the model is ever pickled from the client. Each shard's vectors are written to the
cache as soon as it completes, so an interrupted run keeps what it finished and a rerun
embeds only the rest. Workers must run this version of paperrec (the same image), so their
vectors are the ones this process would make for the same ``Embedder.variant`` (for
``onnx-int8``, which quantises per batch, when the shards are the local chunks: the default).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np
from distributed import Client, as_completed
from tqdm import tqdm

from recommender.core.errors import ClusterUnavailable, ClusterUnreachable
from recommender.embedding.cache import EmbeddingCache
from recommender.embedding.encoders import Embedder, shared_embedder

RETRIES = 2  # re-runs of a shard that raised on its worker (a dead worker's are rescheduled)
SHARD_KEY = "paperrec-embed-shard"  # task keys: f"{SHARD_KEY}-{run}-{shard number}"


def embed_shard(model: str, backend: str, batch_size: int, texts: Sequence[str]) -> np.ndarray:
    """On a worker: the shard's unit vectors, from the model this worker process keeps."""
    return np.asarray(shared_embedder(model, batch_size, backend).encode(texts),
                      dtype=np.float32)


def connect(address: str, timeout: float) -> Client:
    """A client of the scheduler at ``address``; ClusterUnreachable after ``timeout`` s."""
    try:
        return Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ClusterUnreachable(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s ({exc}): "
            f"start it (docker compose --profile cluster up -d scheduler worker) or unset "
            f"--cluster / PAPERREC_EMBED_CLUSTER to embed here") from None


def embed_on_cluster(client: Client, embedder: Embedder, cache: EmbeddingCache,
                     texts_by_hash: dict[str, str], progress: bool = True,
                     shard_size: int = 512) -> None:
    """Embed each text on the cluster and store it under its hash and ``embedder.variant``,
    shard by shard as they complete. ClusterUnavailable when a shard cannot be embedded (what
    completed before is kept in the cache)."""
    if not texts_by_hash:
        return
    # Similar lengths in one shard waste less padding (as embed_into_cache).
    order = sorted(texts_by_hash, key=lambda h: len(texts_by_hash[h]))
    shards = [order[start : start + shard_size] for start in range(0, len(order), shard_size)]
    run = uuid.uuid4().hex[:12]
    futures = {
        client.submit(embed_shard, embedder.name, embedder.backend, embedder.batch_size,
                      [texts_by_hash[h] for h in shard], key=f"{SHARD_KEY}-{run}-{number}",
                      retries=RETRIES, pure=False): shard
        for number, shard in enumerate(shards)
    }
    with tqdm(total=len(order), desc="embedding on the cluster", unit="paper",
              disable=not progress) as bar:
        try:
            for future in as_completed(futures):
                shard = futures.pop(future)
                try:
                    vectors = future.result()
                except Exception as exc:  # the task's own error, or KilledWorker
                    raise ClusterUnavailable(
                        f"the cluster could not embed a shard of {len(shard)} papers "
                        f"({type(exc).__name__}: {exc}); the {bar.n} papers embedded so far "
                        f"are cached: run rebuild-index again to embed the rest") from None
                future.release()  # the worker may forget it: nothing to recompute if it dies
                cache.put(embedder.variant, shard, vectors)
                bar.update(len(shard))
        finally:
            client.cancel(list(futures))

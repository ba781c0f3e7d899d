"""The simulated deployment: a real application (``wiring.build``) over a temporary data
directory and a Redis namespace of its own, holding a dataset's papers, an index of their
vectors, every reader's training likes and a trained collaborative model.

Redis is the configured one (REDIS_URL), else the embedded server started in the temporary
directory; every key of the namespace is erased when the simulation ends, and the directory
removed.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from recommender import wiring
from recommender.core.config import Settings
from recommender.embedding.encoders import TextEncoder
from recommender.evaluation.dataset import Dataset
from recommender.storage.embedded_redis import EmbeddedRedis

SCAN_BATCH = 1000


@contextmanager
def deployment(data: Dataset, vectors: np.ndarray, settings: Settings,
               embedder: TextEncoder, start: float,
               progress: bool = True) -> Iterator[wiring.Paperrec]:
    """A deployment of ``data`` (vectors in its paper order) as it stands at ``start`` (unix
    time): the training likes recorded the day before. Erased on exit."""
    with tempfile.TemporaryDirectory(prefix="paperrec-simulate-") as folder:
        namespace = f"{settings.redis_namespace}-simulate-{uuid.uuid4().hex[:12]}"
        simulated = settings.replace(data_dir=Path(folder), redis_namespace=namespace,
                                     index_check_seconds=0.0, served_history_max=100_000)
        app = wiring.build(simulated, embedder=embedder)
        try:
            _fill(app, data, vectors, start, progress)
            yield app
        finally:
            _erase(app)
            app.close()


def _fill(app: wiring.Paperrec, data: Dataset, vectors: np.ndarray, start: float,
          progress: bool) -> None:
    app.corpus.upsert(data.papers)
    s = app.settings
    app.index_store.publish(
        data.paper_ids, np.array(vectors, dtype=np.float32, copy=True),
        np.asarray([paper.day for paper in data.papers], dtype=np.float64), s.model,
        s.exact_index_max, hashes=[paper.content_hash for paper in data.papers],
        embedding=app.embedder.variant, full=True, overwrite=True)
    before = start - 86400.0
    for user, liked in data.training_likes().items():
        app.feedback.set_many(user, liked, "like", before)
    app.train(progress=progress)


def _erase(app: wiring.Paperrec) -> None:
    """Delete every key of the simulation's namespace."""
    client = app.redis
    pattern = f"{app.settings.redis_namespace}:*"
    batch: list[bytes | str] = []
    for key in client.scan_iter(pattern, count=SCAN_BATCH):
        batch.append(key)
        if len(batch) >= SCAN_BATCH:
            client.delete(*batch)
            batch = []
    if batch:
        client.delete(*batch)
    server = client.connection_pool.connection_kwargs.get("server")
    if isinstance(server, EmbeddedRedis):  # the one started in the temporary directory
        server.leave()

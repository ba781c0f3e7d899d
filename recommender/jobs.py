"""The batch jobs, one function each; the CLI and scripts/ only parse arguments and print."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from recommender.core.config import Settings
from recommender.core.errors import IndexNotReady, InvalidInput
from recommender.core.papers import Rejection
from recommender.core.phases import PhaseClock
from recommender.corpus.arxiv import HarvestSummary, harvest
from recommender.corpus.arxiv_categories import set_for_category
from recommender.corpus.oai_pmh import OaiPmhClient
from recommender.corpus.openreview import OpenReviewClient, VenueSummary, check_venue_id
from recommender.corpus.openreview import harvest as harvest_venue
from recommender.corpus.reading import read_prepared
from recommender.corpus.store import CorpusStore, Prepared, UpsertCounts
from recommender.embedding.cache import EmbeddingCache, EmbedInto, cached_vectors
from recommender.embedding.encoders import Embedder, TextEncoder
from recommender.feedback.store import FeedbackStore
from recommender.index.store import IndexStore, LiveIndex
from recommender.online.events import EventLog
from recommender.ranking import calibration
from recommender.ranking.calibration import Calibration
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.context import RankingContext, context_for, counts_on_rows
from recommender.ranking.rank import rank
from recommender.ranking.request import ListRequest
from recommender.ranking.variants import PRODUCTION
from recommender.storage.versions import VersionedDir

# Calibration on a deployment's feedback (``calibrate``): the latest fifth of each user's
# likes is held out; fewer held-out likes found in the lists than this keeps the default.
HELD_OUT_FRACTION = 0.2
MIN_HELD_OUT_FOUND = 50
# Calibration on the impression log (``calibrate_from_log``): fitted once the log holds this
# many liked production items. Three numbers are fitted (a logistic regression wants at least
# 10 to 20 positives per parameter, so 30 to 60), and the fit's ECE is measured on the newest
# fifth of the lists, which then holds about 20 likes: below 100 that measure is mostly noise.
MIN_LOG_LIKES = 100
LOG_HELD_OUT_FRACTION = 0.2  # the newest lists the ECE is measured on
SAMPLE_DIR = Path(__file__).parent / "corpus" / "sample_data"


def sample_files() -> list[Path]:
    """The bundled sample corpus: ICML 2026 abstracts in the paper-list format."""
    return sorted(SAMPLE_DIR.glob("*.txt"))


@dataclass
class IngestSummary:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    merged: int = 0  # records of papers already stored under another id (kept once)
    rejected: int = 0
    seconds: float = 0.0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)  # PhaseClock's

    def __str__(self) -> str:
        return (f"added {self.added}, updated {self.updated}, unchanged {self.unchanged}, "
                f"merged {self.merged}, rejected {self.rejected}")

    def timing(self) -> str:
        """Where the time went: "12.0 s (1,667 records/s): read 4.1 s, store 6.9 s, ..."."""
        records = self.added + self.updated + self.unchanged + self.merged + self.rejected
        rate = f"{records / self.seconds:,.0f}" if self.seconds else "-"
        took = ", ".join(f"{name} {phase['seconds']:.1f} s" for name, phase in self.phases.items())
        return f"{self.seconds:.1f} s ({rate} records/s): {took}"


def ingest(
    corpus: CorpusStore,
    paths: Iterable[Path],
    on_rejection: Callable[[Rejection], None],
    batch: int = 20_000,
    readers: bool | None = None,
    progress: bool = False,
) -> IngestSummary:
    """Read every file into the corpus; bad records are reported and skipped. A batch is
    one transaction (its rows, their words, identifiers and index entries) and one write
    of the keyword index. Into an empty corpus the lookup indexes are built once at the end
    (``CorpusStore.bulk_load``). Large files are read by reader processes while this one
    writes (``reading.read_prepared``; ``readers`` decides instead of their size).
    The summary says where the time went: ``read`` (parsing the files; with reader
    processes, the time spent waiting for them), ``store`` (SQLite), ``keyword index``
    (tantivy), ``lookup indexes``. ``progress``: a bar of the records stored, a batch at
    a time."""
    counts = UpsertCounts()
    summary = IngestSummary()
    clock = PhaseClock()
    started = time.perf_counter()
    pending: list[Prepared] = []
    with corpus.bulk_load(clock), tqdm(desc="ingest", unit=" records", unit_scale=True,
                                       disable=not progress) as bar:
        for item in read_prepared(list(paths), readers):
            if isinstance(item, Rejection):
                summary.rejected += 1
                on_rejection(item)
                continue
            pending.append(item)
            if len(pending) >= batch:
                clock.lap("read")
                corpus.upsert(pending, counts, clock)
                bar.update(len(pending))
                pending = []
        clock.lap("read")
        corpus.upsert(pending, counts, clock)
        bar.update(len(pending))
    summary.added, summary.updated = counts.added, counts.updated
    summary.unchanged, summary.merged = counts.unchanged, counts.merged
    summary.seconds, summary.phases = time.perf_counter() - started, clock.phases
    return summary


def fetch_arxiv(corpus: CorpusStore, client: OaiPmhClient, categories: Sequence[str],
                on_rejection: Callable[[Rejection], None], from_date: str | None = None,
                summary: HarvestSummary | None = None, progress: bool = True) -> HarvestSummary:
    """Harvest each category's OAI set from arXiv into the corpus, continuing from where the
    last harvest of that set ended (or from ``from_date``). ``summary`` is filled as pages
    are stored, so a caller still has it when a harvest stops with ``HarvestFailed``."""
    sets = list(dict.fromkeys(set_for_category(category) for category in categories))
    summary = summary if summary is not None else HarvestSummary()
    for set_spec in sets:
        harvest(corpus, client, set_spec, on_rejection, from_date, summary, progress)
    return summary


def fetch_openreview(corpus: CorpusStore, client: OpenReviewClient, venues: Sequence[str],
                     on_rejection: Callable[[Rejection], None],
                     summary: VenueSummary | None = None,
                     progress: bool = True) -> VenueSummary:
    """Store the accepted papers of each OpenReview venue (``ICML.cc/2026/Conference``),
    continuing an interrupted fetch; a paper also stored from arXiv (same arXiv id, DOI, or
    title and first author) is kept once. ``summary`` is filled as pages are stored, so a
    caller still has it when a fetch stops with ``HarvestFailed``."""
    summary = summary if summary is not None else VenueSummary()
    for venue_id in dict.fromkeys(check_venue_id(venue) for venue in venues):
        harvest_venue(corpus, client, venue_id, on_rejection, summary, progress)
    return summary


@dataclass
class RebuildSummary:
    version: str
    papers: int
    embedded: int
    seconds: float
    build: str = "full"  # or "incremental"
    reason: str = ""
    phases: str = ""  # seconds per step (PhaseClock)

    def __str__(self) -> str:
        if self.build == "skipped":
            return (f"nothing new: index version {self.version} already holds the "
                    f"{self.papers} papers, {self.seconds:.1f} s")
        return (f"published index version {self.version}: {self.papers} papers, "
                f"{self.embedded} newly embedded, {self.seconds:.1f} s, {self.build} build "
                f"({self.reason}); {self.phases}")


def rebuild_index(corpus: CorpusStore, embedder: TextEncoder,
                  embedding_cache: EmbeddingCache,
                  index: IndexStore, exact_max: int, model: str, progress: bool = True,
                  full: bool = False, if_changed: bool = False,
                  cluster: EmbedCluster | None = None, processes: int = 1) -> RebuildSummary:
    """Embed what is new or changed, then publish an index over every paper: extending the
    previous version when only a few papers were added (see ``IndexStore.publish``), built
    from scratch when ``full`` or when it cannot be extended. ``if_changed``: publish nothing
    when the current version already holds every paper as it is (a scheduled run).
    ``cluster``: the embedding is done on that Dask cluster, shard by shard
    (``recommender.embedding.cluster``); its scheduler is contacted only when there is
    something to embed. Else it is done here, in ``processes`` worker processes
    (``recommender.embedding.processes``; 1: in this process)."""
    started = time.perf_counter()
    clock = PhaseClock()
    rows = list(corpus.index_rows())
    if not rows:
        raise InvalidInput(
            f"the corpus in {corpus.path} is empty: ingest papers first, e.g. "
            f"`paperrec ingest --sample` or `paperrec ingest papers.jsonl`"
        )
    ids = [pid for pid, _, _ in rows]
    hashes = [h for _, h, _ in rows]
    days = np.asarray([day for _, _, day in rows], dtype=np.float64)
    if if_changed and not full and index.is_current(ids, hashes, embedder.variant):
        return RebuildSummary(str(index.current_version()), len(ids), 0,
                              time.perf_counter() - started, "skipped", "nothing new")

    def texts_of(missing: set[str]) -> dict[str, str]:
        texts = corpus.texts([pid for pid, h, _ in rows if h in missing])
        return {h: texts[pid] for pid, h, _ in rows if pid in texts}

    clock.lap("read corpus")
    embed = _on_cluster(embedder, cluster, progress) if cluster else None
    vectors, embedded = cached_vectors(embedder, embedding_cache, hashes, texts_of, progress,
                                       embed, processes, clock)
    # The variant the vectors were made by (model and backend): vectors of another never mix.
    # ``vectors`` is not read past this, so a full build centres it in place.
    published = index.publish(ids, vectors, days, model, exact_max, hashes=hashes,
                              embedding=embedder.variant, full=full, clock=clock,
                              overwrite=True)
    return RebuildSummary(published.version, len(ids), embedded, time.perf_counter() - started,
                          str(published.meta["build"]), str(published.meta["build_reason"]),
                          str(clock))


@dataclass(frozen=True)
class EmbedCluster:
    """Where and how rebuild-index embeds on a cluster (the settings PAPERREC_EMBED_CLUSTER*)."""

    address: str  # the Dask scheduler, tcp://host:8786
    timeout: float = 10.0  # seconds to reach it
    shard_size: int = 512  # texts per task

    @classmethod
    def from_settings(cls, settings: Settings, address: str = "") -> EmbedCluster | None:
        """The cluster at ``address`` (else the setting's), or None: embed in this process."""
        address = address or settings.embed_cluster
        return cls(address, settings.embed_cluster_timeout,
                   settings.embed_shard_size) if address else None


def _on_cluster(embedder: TextEncoder, target: EmbedCluster, progress: bool) -> EmbedInto:
    if not isinstance(embedder, Embedder):
        raise InvalidInput("only a sentence-transformers model (PAPERREC_MODEL) can be run on "
                           "a cluster: its workers load it by name")
    # Imported here: the local embedding never pays for importing Dask (about a second).
    from recommender.embedding.cluster import connect as connect_cluster
    from recommender.embedding.cluster import embed_on_cluster

    def embed(cache: EmbeddingCache, texts_by_hash: dict[str, str]) -> None:
        with connect_cluster(target.address, target.timeout) as client:
            embed_on_cluster(client, embedder, cache, texts_by_hash, progress,
                             target.shard_size)

    return embed


@dataclass
class TrainSummary:
    version: str
    users: int
    papers: int
    likes: int
    calibration: str
    seconds: float
    skipped: bool = False

    def __str__(self) -> str:
        if self.skipped:
            return (f"nothing new: collaborative model version {self.version or '(none)'} was "
                    f"trained on these {self.likes} likes and this index, {self.seconds:.1f} s")
        return (f"published collaborative model version {self.version}: {self.users} users, "
                f"{self.papers} papers, {self.likes} likes, probability: {self.calibration}, "
                f"{self.seconds:.1f} s")


def train_collaborative(feedback: FeedbackStore, models: VersionedDir, index: LiveIndex,
                        progress: bool = True, if_changed: bool = False,
                        events: EventLog | None = None) -> TrainSummary:
    """Fit collaborative filtering on every like in Redis, calibrate the lists' probability
    on the impression log (``calibrate_from_log``, once ``events`` holds MIN_LOG_LIKES liked
    items), else on the latest likes (``calibrate``), and publish both beside the index.
    ``if_changed``: publish nothing when the current version was trained on the same likes
    over the same index version, or when there are no likes yet (a scheduled run)."""
    started = time.perf_counter()
    likes = feedback.likes_by_user()
    current = models.current()
    fingerprint = _fingerprint(likes, index.store.current_version())
    total = sum(len(v) for v in likes.values())
    if if_changed and (not likes or (current is not None and _trained_on(models, current)
                                     == fingerprint)):
        return TrainSummary(current or "", len(likes), 0, total, "",
                            time.perf_counter() - started, skipped=True)
    if not likes:
        raise InvalidInput("there are no likes yet: collaborative filtering learns from users' "
                           "likes, so record some first (PUT /v1/users/<user>/feedback/<paper>)")
    model = CollaborativeModel.fit(likes, progress=progress)
    model.meta["likes_fingerprint"] = fingerprint
    try:
        served = index.get()
    except IndexNotReady:
        served = None  # nothing to rank with: the default calibration
    logged = calibrate_from_log(events) if events is not None else None
    if logged is not None:
        model.calibration = logged
    elif served is not None:
        ctx = context_for(served, model, counts_on_rows(served, feedback.like_counts()))
        model.calibration = calibrate(ctx, {
            user: [served.row(p) for p in liked if served.has(p)]
            for user, liked in likes.items()}, served.model)
    model.meta["calibration"] = model.calibration.to_dict()
    version = models.publish(lambda folder, _version: model.save(folder))
    return TrainSummary(version, len(likes), len(model.item_ids),
                        sum(len(v) for v in likes.values()), model.calibration.source,
                        time.perf_counter() - started)


def _fingerprint(likes: Mapping[str, Sequence[str]], index_version: str | None) -> str:
    """What a model is trained on: every (user, paper) like, and the index version."""
    digest = hashlib.sha256(f"index {index_version}\n".encode())
    for user in sorted(likes):
        for paper_id in sorted(likes[user]):
            digest.update(f"{user}\t{paper_id}\n".encode())
    return digest.hexdigest()


def _trained_on(models: VersionedDir, version: str) -> str | None:
    fingerprint = models.meta(version).get("likes_fingerprint")
    return fingerprint if isinstance(fingerprint, str) else None


def calibrate(ctx: RankingContext, likes_by_user: Mapping[str, Sequence[int]],
              embedding_model: str) -> Calibration:
    """The probability fitted on a deployment's feedback: for each user with two likes or more
    (index rows, oldest first) the latest HELD_OUT_FRACTION (at least one) is held out and the
    list ranked from the others; which of its top ``calibration.DEPTH`` the user went on to
    like are the labels. The default for the index's embedding model when fewer than
    MIN_HELD_OUT_FOUND are found."""
    seen = calibration.Observations.empty()
    for rows in likes_by_user.values():
        if len(rows) < 2:
            continue
        held = max(1, int(len(rows) * HELD_OUT_FRACTION))
        liked = np.asarray(rows[:-held], dtype=np.int64)
        ranked = rank(ctx, ListRequest(liked, calibration.DEPTH))
        seen.add(ranked.scores / ranked.scale, len(liked), np.isin(ranked.rows, rows[-held:]))
    if seen.positives < MIN_HELD_OUT_FOUND:
        return calibration.default_for(embedding_model)
    z, likes, labels = seen.arrays()
    return calibration.fit(z, likes, labels, source=f"fitted on {seen.positives} of "
                           f"{sum(len(labels) for labels in seen.labels)} held-out list items")


def calibrate_from_log(log: EventLog, since: float | None = None) -> Calibration | None:
    """The probability fitted on the deployment's own impressions: every item production
    ranked (variant ``hybrid``, a finite z: not a followed paper) on a list logged since
    ``since``, with the reader's likes when it was served; its label is whether the reader
    liked it from that list (an outcome joined to its list as the report joins them). Fitted
    on all but the newest LOG_HELD_OUT_FRACTION of the lists and measured there (its ECE),
    then refitted on every list. None when fewer than MIN_LOG_LIKES items were liked."""
    liked: set[tuple[str, str, str]] = {
        (o.list_id, o.user, o.paper) for o in log.outcomes(since) if o.kind == "like"}
    z: list[float] = []
    likes: list[int] = []
    labels: list[int] = []
    starts: list[int] = []  # where each list's items start, oldest list first
    seen: set[str] = set()
    for served in sorted(log.lists(since), key=lambda s: s.at):
        if served.list_id in seen:
            continue
        seen.add(served.list_id)
        first = len(z)
        for i, paper in enumerate(served.papers):
            if (i < len(served.z) and i < len(served.variants)
                    and served.variants[i] == PRODUCTION and np.isfinite(served.z[i])):
                z.append(served.z[i])
                likes.append(served.likes)
                labels.append(int((served.list_id, served.user, paper) in liked))
        if len(z) > first:
            starts.append(first)
    positives = sum(labels)
    if positives < MIN_LOG_LIKES:
        return None
    z_all, likes_all = np.asarray(z), np.asarray(likes, np.float64)
    labels_all = np.asarray(labels, np.int64)
    cut = starts[len(starts) - max(1, int(len(starts) * LOG_HELD_OUT_FRACTION))]
    ece = None
    if 0 < labels_all[:cut].sum() < cut:
        older = calibration.fit(z_all[:cut], likes_all[:cut], labels_all[:cut], "log")
        ece = round(calibration.expected_calibration_error(
            older.probability(z_all[cut:], likes_all[cut:]), labels_all[cut:]), 4)
    fitted = calibration.fit(z_all, likes_all, labels_all, source=(
        f"fitted on the impression log: {positives} liked of {len(labels)} items on "
        f"{len(starts)} lists" + ("" if ece is None else f", ECE {ece} on the newest fifth")),
        fitted_from="log")
    return replace(fitted, ece=ece, lists=len(starts))

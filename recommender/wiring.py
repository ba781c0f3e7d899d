"""The application object: every part of paperrec, built once from the settings, and the jobs.

``build(settings)`` returns a ``Paperrec``. It owns every resource (the Redis client, the
stores, the embedding cache, the live index and model, the embedder, the secret and what is
signed with it, the harvest clients) and offers the batch jobs as methods
(``ingest``, ``fetch_arxiv``, ``fetch_openreview``, ``rebuild_index``, ``train``,
``import_library``, ``send_digests``, ``evaluate``), each configured from the settings here.
The CLI, the service, the tests and the benchmarks go through it; nobody repeats a job's
arguments or builds a part of their own.

Each part is made on first use (``functools.cached_property``), once per object: a fetch
never starts the embedded Redis or loads the model, and the embedding cache is opened once a
process. Redis connects, the index and the model load on first use too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import redis

from recommender import jobs
from recommender.core.config import Settings
from recommender.core.errors import InvalidInput, PaperrecError, StoreUnavailable
from recommender.core.papers import Rejection
from recommender.corpus.arxiv import HarvestSummary
from recommender.corpus.library import ParsedLibrary
from recommender.corpus.oai_pmh import OaiPmhClient
from recommender.corpus.openreview import OpenReviewClient, VenueSummary
from recommender.corpus.polite_http import DEADLINE_SECONDS
from recommender.corpus.store import CorpusStore
from recommender.digest.confirmations import AddressConfirmations
from recommender.digest.feed_tokens import FeedTokens
from recommender.digest.feeds import FeedBuilder
from recommender.digest.job import DigestJob, DigestSummary
from recommender.digest.link_actions import LinkActions
from recommender.digest.links import LinkSigner, load_secret
from recommender.digest.mailer import Mailer
from recommender.digest.subscriptions import SubscriptionStore
from recommender.embedding.cache import EmbeddingCache
from recommender.embedding.encoders import TextEncoder, shared_embedder
from recommender.evaluation.dataset import Dataset
from recommender.evaluation.runner import run_evaluation
from recommender.feedback import library
from recommender.feedback.collections import CollectionStore
from recommender.feedback.layout import LayoutMigration, migrate_layout
from recommender.feedback.rules import RuleStore
from recommender.feedback.store import FeedbackStore
from recommender.feedback.upload_quota import UploadQuota
from recommender.feedback.user_data import UserData
from recommender.feedback.zotero import ZoteroConnections, ZoteroJobSummary
from recommender.index.store import IndexStore, LiveIndex
from recommender.online.events import EventLog
from recommender.online.experiments import Experiment, ExperimentStore
from recommender.online.report import Report, build_report
from recommender.online.snapshot import (
    WINDOW_DAYS,
    ExportedFigures,
    read_snapshot,
    refresh_in_background,
    write_snapshot,
)
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.recommender import Recommender
from recommender.ranking.variants import PRODUCTION, Variant, variants
from recommender.storage.redis_client import connect
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_writes import UserWrites
from recommender.storage.versions import LiveVersion, VersionedDir

OnRejection = Callable[[Rejection], None]


@dataclass(frozen=True)
class StepOutcome:
    step: str  # fetch arxiv, rebuild-index, train, digest
    status: Literal["done", "skipped", "failed"]
    detail: str  # the step's summary, why it was skipped, or what went wrong

    def __str__(self) -> str:
        return f"{self.step}: {self.status}" + (f" ({self.detail})" if self.detail else "")


def build(settings: Settings, *, embedder: TextEncoder | None = None) -> Paperrec:
    """The application over these settings; ``embedder`` replaces the configured model
    (tests that are not about the model pass a small deterministic one)."""
    return Paperrec(settings, embedder)


class Paperrec:
    """Every part, from the settings, and the jobs over them (see the module's docstring)."""

    def __init__(self, settings: Settings, embedder: TextEncoder | None = None) -> None:
        self.settings = settings
        self._embedder = embedder

    # --- stores and clients ---------------------------------------------------------------

    @cached_property
    def redis(self) -> redis.Redis:
        return connect(self.settings)

    @cached_property
    def keys(self) -> RedisKeys:
        return RedisKeys(self.settings.redis_namespace)

    @cached_property
    def writes(self) -> UserWrites:
        return UserWrites(self.redis, self.settings.redis_wait_replicas,
                          self.settings.redis_wait_ms)

    @cached_property
    def corpus(self) -> CorpusStore:
        return CorpusStore(self.settings.corpus_path)

    @cached_property
    def embedder(self) -> TextEncoder:
        """The model the settings name, on their backend (loaded on first use, once a
        process), unless another was given to ``build``."""
        return self._embedder or configured_embedder(self.settings)

    @cached_property
    def embedding_cache(self) -> EmbeddingCache:
        return EmbeddingCache(self.settings.embedding_cache_path)

    @cached_property
    def index_store(self) -> IndexStore:
        return IndexStore(self.settings.index_dir)

    @cached_property
    def index(self) -> LiveIndex:
        return LiveIndex(self.index_store, self.settings.index_check_seconds)

    @cached_property
    def models(self) -> VersionedDir:
        """The published collaborative models."""
        return VersionedDir(self.settings.collaborative_dir)

    @cached_property
    def collaborative(self) -> LiveVersion[CollaborativeModel]:
        models = self.models
        return LiveVersion(models, lambda v: CollaborativeModel.load(models.path(v)),
                           "collaborative model", "no model trained yet: run `paperrec train`",
                           self.settings.index_check_seconds)

    @cached_property
    def feedback(self) -> FeedbackStore:
        return FeedbackStore(self.redis, self.keys, self.settings.served_history_max,
                             self.writes)

    @cached_property
    def upload_quota(self) -> UploadQuota:
        return UploadQuota(self.redis, self.keys, self.settings.uploads_per_day, self.writes)

    @cached_property
    def subscriptions(self) -> SubscriptionStore:
        return SubscriptionStore(self.redis, self.keys, self.writes)

    @cached_property
    def rules(self) -> RuleStore:
        """The readers' follow and mute rules."""
        return RuleStore(self.redis, self.keys, self.writes)

    @cached_property
    def collections(self) -> CollectionStore:
        """The readers' named collections of liked papers, one list each."""
        return CollectionStore(self.redis, self.keys, self.feedback, self.writes)

    @cached_property
    def user_data(self) -> UserData:
        return UserData(self.feedback,
                        [self.subscriptions, self.rules, self.collections, self.feed_tokens,
                         self.corpus, self.zotero],
                        forget=[self.corpus.forget_uploader, self.events.forget])

    @cached_property
    def zotero(self) -> ZoteroConnections:
        """The readers' connected Zotero libraries, synced as likes and collections
        (keys encrypted with a key derived from the deployment's secret)."""
        s = self.settings
        return ZoteroConnections(self.redis, self.keys, self.writes, self.secret,
                                 s.zotero_api_url, s.zotero_retries, corpus=self.corpus,
                                 quota=self.upload_quota,
                                 embed=lambda ids: library.embed_papers(
                                     self.corpus, ids, self.embedder, self.embedding_cache),
                                 budget_seconds=s.zotero_budget_seconds)

    @cached_property
    def secret(self) -> bytes:
        """The deployment's secret (PAPERREC_SECRET_KEY, else secret.key in the data dir)."""
        return load_secret(self.settings.secret_key, self.settings.data_dir)

    @cached_property
    def links(self) -> LinkSigner:
        return LinkSigner(self.secret)

    @cached_property
    def link_actions(self) -> LinkActions:
        return LinkActions(self.links, self.subscriptions, self.feedback, self.corpus,
                           self.events, self.settings.public_url)

    @cached_property
    def confirmations(self) -> AddressConfirmations:
        """The links that confirm a digest address (signed with the links' secret)."""
        s = self.settings
        return AddressConfirmations(self.secret, self.redis, self.keys, self.subscriptions,
                                    s.public_url, s.mail_from)

    @cached_property
    def feed_tokens(self) -> FeedTokens:
        """The private feed URLs (signed with the links' secret)."""
        return FeedTokens(self.redis, self.keys, self.secret, self.settings.public_url,
                          self.writes)

    @cached_property
    def recommender(self) -> Recommender:
        return Recommender(self.corpus, self.index, self.collaborative, self.feedback,
                           self.embedder, self.embedding_cache, events=self.events,
                           experiments=self.experiments, variants=self.variants)

    @cached_property
    def events(self) -> EventLog:
        """The impression log: lists served and what readers did with them."""
        return EventLog(self.redis, self.keys, self.settings.data_dir / "events",
                        self.settings.events_stream_max, self.settings.events_per_reader_day)

    @cached_property
    def experiments(self) -> ExperimentStore:
        """The ranking experiment running, and those that ran."""
        return ExperimentStore(self.redis, self.keys)

    @cached_property
    def variants(self) -> dict[str, Variant]:
        """The ranking variants: built in, and PAPERREC_RANKING_VARIANTS's."""
        try:
            return variants(self.settings.ranking_variants)
        except ValueError as exc:
            raise InvalidInput(f"PAPERREC_RANKING_VARIANTS: {exc}") from None

    @cached_property
    def feeds(self) -> FeedBuilder:
        """Reading lists as Atom and JSON Feed."""
        return FeedBuilder(self.recommender, self.corpus, self.feedback, self.rules,
                           self.index, self.collaborative, self.settings.public_url,
                           self.collections, self.links)

    @cached_property
    def digest(self) -> DigestJob:
        return DigestJob(self.recommender, self.subscriptions, self.feedback, self.corpus,
                         self.links, self.settings.public_url, self.settings.mail_from,
                         self.collections, self.zotero, self.events)

    @cached_property
    def arxiv(self) -> OaiPmhClient:
        s = self.settings
        return OaiPmhClient(s.arxiv_oai_url, s.arxiv_delay_seconds, s.arxiv_retries)

    @cached_property
    def openreview(self) -> OpenReviewClient:
        s = self.settings
        return OpenReviewClient(s.openreview_url, s.openreview_delay_seconds,
                                s.openreview_retries)

    def close(self) -> None:
        """Close what was opened (the parts never used were never made)."""
        for name in ("arxiv", "openreview", "corpus", "embedding_cache"):
            part = self.__dict__.pop(name, None)
            if part is not None:
                part.close()

    # --- jobs -----------------------------------------------------------------------------

    def ingest(self, paths: Iterable[Path], on_rejection: OnRejection,
               progress: bool = False) -> jobs.IngestSummary:
        """Read papers from files into the corpus; bad records are reported and skipped."""
        return jobs.ingest(self.corpus, paths, on_rejection, progress=progress)

    def fetch_arxiv(self, categories: Sequence[str], on_rejection: OnRejection, *,
                    from_date: str | None = None, summary: HarvestSummary | None = None,
                    progress: bool = True, deadline: float | None = None) -> HarvestSummary:
        """Harvest these arXiv categories (``jobs.fetch_arxiv``), stopping after ``deadline``
        seconds (default: polite_http.DEADLINE_SECONDS); a later harvest continues."""
        self.arxiv.begin(deadline)
        return jobs.fetch_arxiv(self.corpus, self.arxiv, categories, on_rejection, from_date,
                                summary, progress)

    def fetch_openreview(self, venues: Sequence[str], on_rejection: OnRejection, *,
                         summary: VenueSummary | None = None,
                         progress: bool = True) -> VenueSummary:
        """Store the accepted papers of these OpenReview venues (``jobs.fetch_openreview``)."""
        self.openreview.begin()
        return jobs.fetch_openreview(self.corpus, self.openreview, venues, on_rejection,
                                     summary, progress)

    def rebuild_index(self, *, full: bool = False, if_changed: bool = False,
                      cluster: str = "", progress: bool = True) -> jobs.RebuildSummary:
        """Embed what is new and publish an index version (``jobs.rebuild_index``);
        ``cluster``: a Dask scheduler's address instead of PAPERREC_EMBED_CLUSTER."""
        s = self.settings
        return jobs.rebuild_index(self.corpus, self.embedder, self.embedding_cache,
                                  self.index_store, s.exact_index_max, s.model,
                                  progress=progress, full=full, if_changed=if_changed,
                                  cluster=jobs.EmbedCluster.from_settings(s, cluster),
                                  processes=s.embed_process_count)

    def train(self, *, if_changed: bool = False, progress: bool = True) -> jobs.TrainSummary:
        """Fit and publish the collaborative model and the probability shown
        (``jobs.train_collaborative``: on the impression log once it holds enough)."""
        return jobs.train_collaborative(self.feedback, self.models, self.index,
                                        progress=progress, if_changed=if_changed,
                                        events=self.events)

    def import_library(self, parsed: ParsedLibrary, user_id: str, now: float,
                       collection: str | None = None) -> library.ImportReport:
        """Like the papers of a reader's library file, adding the unknown ones;
        ``collection``: into that collection of theirs (NotFound, before anything is
        written, when they have none of that id)."""
        if collection is not None:
            self.collections.get(user_id, collection)
        return library.import_library(parsed, user_id, corpus=self.corpus,
                                      feedback=self.feedback, quota=self.upload_quota,
                                      embedder=self.embedder,
                                      embedding_cache=self.embedding_cache, now=now,
                                      collection=collection)

    def sync_zotero(self, now: float, *, deadline: float | None = None) -> ZoteroJobSummary:
        """Sync every connected Zotero library (each within PAPERREC_ZOTERO_BUDGET_SECONDS),
        starting none after ``deadline`` seconds; one reader's failure is theirs alone."""
        summary = ZoteroJobSummary()
        for _, synced in self.zotero.sync_all(now, deadline_seconds=deadline):
            summary.count(synced)
        return summary

    def send_digests(self, now: float, *, only_user: str | None = None,
                     dry_run: Path | None = None, progress: bool = True) -> DigestSummary:
        """Send every due digest; ``dry_run``: write them as .eml files into that folder."""
        mailer = Mailer(self.settings.smtp_url, dry_run)  # InvalidInput without SMTP_URL
        try:
            return self.digest.run(mailer, now, only_user=only_user, progress=progress)
        finally:
            mailer.close()

    def evaluate(self, data: Dataset, methods: list[str], *, seed: int = 0,
                 index: str = "auto", new_papers: float | None = None,
                 onboarding: list[int] | None = None, interests: bool = False,
                 progress: bool = True) -> dict[str, Any]:
        """The offline evaluation of these methods (``evaluation.runner``)."""
        return run_evaluation(data, methods, seed, self.settings, self.embedder,
                              self.embedding_cache, progress=progress, index=index,
                              new_papers=new_papers, onboarding=onboarding,
                              interests=interests)

    def scheduled_round(self, now: float, on_rejection: OnRejection) -> list[StepOutcome]:
        """One round of the scheduled jobs (`paperrec jobs`): harvest the arXiv categories
        of PAPERREC_ARXIV_CATEGORIES (if any), sync the readers' Zotero libraries (if any are
        connected; none started after one interval), publish an index version if anything is new,
        retrain if the likes changed, send the digests that are due (if SMTP_URL is set),
        export the impression log to its daily files and write the latest online figures.
        A failed step is reported and the next ones still run: a failed fetch never stops
        the digests of what is there, and a fetch that hangs or crawls stops after one
        interval (PAPERREC_JOBS_INTERVAL_SECONDS; the next round continues where it stopped),
        so the rebuild, the training and the digests never wait longer on it."""
        s = self.settings
        categories = [c.strip() for c in s.arxiv_categories.split(",") if c.strip()]
        steps: list[tuple[str, Callable[[], object] | None, str]] = [
            ("fetch arxiv", (lambda: self.fetch_arxiv(
                categories, on_rejection, progress=False, deadline=min(
                    DEADLINE_SECONDS, s.jobs_interval_seconds)))
             if categories else None, "PAPERREC_ARXIV_CATEGORIES is empty"),
            ("sync zotero", (lambda: self.sync_zotero(now, deadline=s.jobs_interval_seconds))
             if self._zotero_connected() else None, "no Zotero library is connected"),
            ("rebuild-index", lambda: self.rebuild_index(if_changed=True, progress=False), ""),
            ("train", lambda: self.train(if_changed=True, progress=False), ""),
            ("digest", (lambda: self.send_digests(now, progress=False)) if s.smtp_url else None,
             "SMTP_URL is empty"),
            ("export events", lambda: self.export_events(now), ""),
        ]
        outcomes = []
        for name, step, why_not in steps:
            if step is None:
                outcomes.append(StepOutcome(name, "skipped", why_not))
                continue
            try:
                outcomes.append(StepOutcome(name, "done", str(step())))
            except Exception as exc:  # noqa: BLE001 (reported; the next steps still run)
                message = exc.message if isinstance(exc, PaperrecError) else repr(exc)
                outcomes.append(StepOutcome(name, "failed", message))
        return outcomes

    # --- online figures and experiments (recommender.online) ---------------------------------

    def report(self, now: float, *, days: float | None = WINDOW_DAYS) -> Report:
        """The online figures of the last ``days`` days (None: the whole log). Each
        experiment that ran in the window is judged over its whole span, not the window's."""
        since = None if days is None else now - days * 86400
        history = [e for e in self.experiments.history()
                   if since is None or e.stopped_at is None or e.stopped_at >= since]
        found = build_report(self.events, self.corpus.count(), now, since=since,
                             experiments=history)
        earlier = [e for e in history if since is not None and e.started_at < since]
        if earlier:
            whole = {result["id"]: result for result in build_report(
                self.events, self.corpus.count(), now,
                since=min(e.started_at for e in earlier), experiments=earlier).experiments}
            found.experiments = [whole.get(result["id"], result) for result in found.experiments]
        return found

    def verdicts(self, now: float, *, last: int = 10) -> list[dict[str, Any]]:
        """The ``last`` experiments started, newest first, each judged over its whole span
        (``report``'s ``experiments`` entries: the experiment and its ``verdict``)."""
        history = self.experiments.history()[:last]
        if not history:
            return []
        return build_report(self.events, self.corpus.count(), now,
                            since=min(e.started_at for e in history),
                            experiments=history).experiments

    def export_events(self, now: float) -> ExportedFigures:
        """Move the impression log's stream into its daily files, then write the figures of
        the last WINDOW_DAYS days that /metrics and /admin/online read
        (``online.snapshot``)."""
        summary = self.events.export()
        return ExportedFigures(summary, self._write_figures(now))

    def online_figures(self, now: float) -> dict[str, Any]:
        """The latest figures written (``online.snapshot``): computed and written now when
        there are none yet; when older than PAPERREC_ONLINE_FIGURES_SECONDS, the next are
        computed in the background while these are answered."""
        folder = self.events.folder
        found = read_snapshot(folder)
        if found is None:
            self._write_figures(now)
            found = read_snapshot(folder)
            assert found is not None
        elif 0 < self.settings.online_figures_seconds < now - float(found["written_at"]):
            refresh_in_background(folder, lambda: self._write_figures(time.time()))
        return found

    def _write_figures(self, now: float) -> Path:
        return write_snapshot(self.events.folder, self.report(now).to_dict(), now)

    def start_experiment(self, candidate: str, now: float, *, mode: str = "interleave",
                         share: float = 0.5) -> Experiment:
        """Serve ``candidate`` (a name of ``variants``) beside production from the next list
        on, stopping the experiment running."""
        if candidate not in self.variants:
            raise InvalidInput(f"no ranking variant is named {candidate!r}; choose from "
                               f"{', '.join(n for n in self.variants if n != PRODUCTION)}")
        return self.experiments.start(PRODUCTION, candidate, mode, share, now)

    def stop_experiment(self, now: float) -> Experiment | None:
        """Stop the experiment running (None when none was)."""
        return self.experiments.stop(now)

    def _zotero_connected(self) -> bool:
        """Whether any reader has a Zotero library connected (True when that cannot be told:
        the step then runs and reports why it failed)."""
        try:
            return self.zotero.connected() > 0
        except PaperrecError:
            return True

    def stats(self) -> dict[str, Any]:
        """What the corpus, the index, the collaborative model and Redis hold (`paperrec
        stats`); ``readers`` is None, and ``redis_error`` says why, when Redis is down."""
        index_version, model_version = self.index_store.current_version(), self.models.current()
        index = self.index_store.dir.meta(index_version) if index_version else {}
        model = self.models.meta(model_version) if model_version else {}
        found: dict[str, Any] = {
            "corpus": {"papers": self.corpus.count(), "withdrawn": self.corpus.withdrawn_count(),
                       "pending": self.corpus.pending_count(),
                       "harvests": [{"source": source, "set": set_spec, "newest": newest}
                                    for source, set_spec, newest in self.corpus.harvests()]},
            "index": {"version": index_version, "papers": index.get("count"),
                      "kind": index.get("kind"), "embedding": index.get("embedding"),
                      "created_at": index.get("created_at")},
            "collaborative": {"version": model_version, "users": model.get("n_users"),
                              "papers": model.get("n_items")},
            "readers": None, "redis_error": None,
        }
        try:
            counts = self.feedback.signal_counts()
            found["readers"] = {"readers": counts["readers"], "likes": counts["likes"],
                                "dislikes": counts["dislikes"],
                                "subscribers": sum(1 for _ in self.subscriptions.subscribers())}
        except StoreUnavailable as exc:
            found["redis_error"] = exc.message
        return found

    def migrate_redis(self) -> LayoutMigration:
        """Move an older paperrec's Redis keys into today's layout."""
        return migrate_layout(self.redis, self.keys)


def configured_embedder(settings: Settings) -> TextEncoder:
    """The model the settings name, on their backend (loaded on first use, once a process)."""
    return shared_embedder(settings.model, settings.embed_batch_size, settings.embed_backend)

"""The one place where the parts of paperrec are built from the settings.

``build(settings)`` makes the one Redis client, every store, the live index and model, the
embedder, the link signer and feed tokens, the recommender, the feeds and the digest job. The
service, the batch jobs, the digest job, readiness and metrics are handed the parts they need
from here; nothing reaches through another object for its parts. Nothing is connected or
loaded here: Redis connects, the index and the model load on first use.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from recommender.core.config import Settings
from recommender.corpus.store import CorpusStore
from recommender.digest.feed_tokens import FeedTokens
from recommender.digest.feeds import FeedBuilder
from recommender.digest.job import DigestJob
from recommender.digest.link_actions import LinkActions
from recommender.digest.links import LinkSigner, load_secret
from recommender.digest.subscriptions import SubscriptionStore
from recommender.embedding.encoders import TextEncoder, shared_embedder
from recommender.feedback.rules import RuleStore
from recommender.feedback.store import FeedbackStore
from recommender.feedback.user_data import UserData
from recommender.index.store import IndexStore, LiveIndex
from recommender.ranking.collaborative import CollaborativeModel
from recommender.ranking.recommender import Recommender
from recommender.storage.redis_client import connect
from recommender.storage.redis_keys import RedisKeys
from recommender.storage.redis_writes import UserWrites
from recommender.storage.versions import LiveVersion, VersionedDir


@dataclass(frozen=True)
class Components:
    settings: Settings
    redis: redis.Redis
    keys: RedisKeys
    corpus: CorpusStore
    embedder: TextEncoder
    index_store: IndexStore
    index: LiveIndex
    models: VersionedDir  # published collaborative models
    collaborative: LiveVersion[CollaborativeModel]
    feedback: FeedbackStore
    subscriptions: SubscriptionStore
    rules: RuleStore  # the readers' follow and mute rules
    user_data: UserData
    links: LinkSigner
    link_actions: LinkActions
    feed_tokens: FeedTokens  # the private feed URLs (signed with the links' secret)
    recommender: Recommender
    feeds: FeedBuilder  # reading lists as Atom and JSON Feed
    digest: DigestJob


def build(settings: Settings, *, embedder: TextEncoder | None = None) -> Components:
    """Every part, from the settings; ``embedder`` replaces the configured model (tests that
    are not about the model pass a small deterministic one)."""
    client = connect(settings)
    keys = RedisKeys(settings.redis_namespace)
    writes = UserWrites(client, settings.redis_wait_replicas, settings.redis_wait_ms)
    corpus = CorpusStore(settings.corpus_path)
    encoder = embedder or configured_embedder(settings)
    index_store = IndexStore(settings.index_dir)
    index = LiveIndex(index_store, settings.index_check_seconds)
    models = VersionedDir(settings.collaborative_dir)
    collaborative = LiveVersion(models, lambda v: CollaborativeModel.load(models.path(v)),
                                "collaborative model",
                                "no model trained yet: run `paperrec train`",
                                settings.index_check_seconds)
    feedback = FeedbackStore(client, keys, settings.served_history_max, writes)
    subscriptions = SubscriptionStore(client, keys, writes)
    rules = RuleStore(client, keys, writes)
    secret = load_secret(settings.secret_key, settings.data_dir)
    links = LinkSigner(secret)
    feed_tokens = FeedTokens(client, keys, secret, settings.public_url, writes)
    recommender = Recommender(corpus, index, collaborative, feedback, encoder,
                              settings.embedding_cache_path)
    return Components(
        settings=settings, redis=client, keys=keys, corpus=corpus, embedder=encoder,
        index_store=index_store, index=index, models=models, collaborative=collaborative,
        feedback=feedback, subscriptions=subscriptions, rules=rules,
        user_data=UserData(feedback, [subscriptions, rules, feed_tokens]), links=links,
        link_actions=LinkActions(links, subscriptions, feedback, corpus),
        feed_tokens=feed_tokens, recommender=recommender,
        feeds=FeedBuilder(recommender, corpus, feedback, rules, index, collaborative,
                          settings.public_url),
        digest=DigestJob(recommender, subscriptions, feedback, corpus, links,
                         settings.public_url, settings.mail_from),
    )


def configured_embedder(settings: Settings) -> TextEncoder:
    """The model the settings name, on their backend (loaded on first use, once a process);
    all the offline evaluation needs of the parts."""
    return shared_embedder(settings.model, settings.embed_batch_size, settings.embed_backend)

"""The digest job: every due subscriber gets one email per period with their new papers.

Only confirmed addresses get a digest (``recommender.digest.confirmations``); a subscription
still waiting for its confirmation is skipped and counted ("address not confirmed").

Each subscriber is due once per period (a day, or an ISO week) and not sooner than most of a
period after their last digest. The reading list comes from the same engine as the API, with
every paper already served to the user left out; below it, one section per collection of
the reader's (its own list's new papers, those of the overall list left out). A digest is
recorded in Redis right after the SMTP server accepts it, so a job that crashed half-way
and runs again sends only the rest; its Message-ID is fixed per user and period, so even
the one message that could go out twice (a crash between the server's acceptance and the
record) is recognisably the same.
A lock in Redis (redis-py's ``Lock``) keeps a second job from sending at the same time.

Each list of a digest (the overall one, each collection's section) is logged in the impression
log (``recommender.online.events``) with surface "digest" once the email is sent, and its id
travels in the email's links: a title's open link logs a click, "More like this" and "Not
interested" the like or dislike, each joined to its list and place. A dry run logs its lists
too, so the links of the ``.eml`` files it writes join as a sent digest's do when a developer
follows them: dry-run against a production Redis only if those lists may be counted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import logging
import smtplib
from collections import Counter
from dataclasses import dataclass, field, replace

from redis.exceptions import LockError
from redis.lock import Lock
from tqdm import tqdm

from recommender.core.errors import PaperrecError
from recommender.core.papers import Paper
from recommender.corpus.store import CorpusStore
from recommender.digest.email import DigestContent, DigestItem, DigestSection, render_digest
from recommender.digest.links import Action, LinkSigner
from recommender.digest.mailer import Mailer
from recommender.digest.subscriptions import Frequency, Subscription, SubscriptionStore
from recommender.feedback.collections import CollectionStore
from recommender.feedback.store import FeedbackStore
from recommender.feedback.zotero import ZoteroConnections
from recommender.online.events import EventLog
from recommender.ranking.explain import Recommendation
from recommender.ranking.item_view import item_view
from recommender.ranking.recommender import ReadingList, Recommender
from recommender.storage.redis_options import redis_errors

log = logging.getLogger(__name__)
MIN_GAP_SECONDS = {"daily": 20 * 3600, "weekly": 6 * 86400}
SECTION_ITEMS = 5  # papers in a collection's section of a digest at most
LOCK_SECONDS = 30 * 60


@dataclass
class DigestSummary:
    due: int = 0
    sent: int = 0
    failed: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def __str__(self) -> str:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "none"
        return (f"due {self.due}, sent {self.sent}, failed {self.failed}, "
                f"skipped {sum(self.skipped.values())} ({skipped})")


def _monday(now: float) -> dt.date:
    day = dt.datetime.fromtimestamp(now, dt.UTC).date()
    return day - dt.timedelta(days=day.weekday())


def period_of(frequency: Frequency, now: float) -> str:
    day = dt.datetime.fromtimestamp(now, dt.UTC).date()
    if frequency == "daily":
        return day.isoformat()
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


@dataclass
class DigestJob:
    """Sends each due subscriber their digest; built once by ``recommender.wiring``."""

    recommender: Recommender
    subscriptions: SubscriptionStore
    feedback: FeedbackStore
    corpus: CorpusStore
    links: LinkSigner
    public_url: str  # the base of every link in the emails
    mail_from: str
    # The readers' collections: each collection with papers to show gets a section.
    collections: CollectionStore | None = None
    # The readers' Zotero connections: a sync that failed (a revoked key, a library gone) is
    # said in the footer, so the reader fixes it.
    zotero: ZoteroConnections | None = None
    # The impression log: each list mailed is logged there, once sent.
    events: EventLog | None = None

    def _zotero_notice(self, user_id: str) -> str | None:
        if self.zotero is None:
            return None
        error = self.zotero.state(user_id).error
        return (f"Your Zotero library no longer syncs: {error.rstrip('.')}. Connect it again "
                f"on your Library page: {self.public_url}/library" if error else None)

    def run(self, mailer: Mailer, now: float, only_user: str | None = None,
            progress: bool = True) -> DigestSummary:
        """Send (or with a dry-run mailer, write) every due digest; one job at a time."""
        lock = self.subscriptions.lock(LOCK_SECONDS)
        if not mailer.dry_run and not _acquire(lock):
            raise PaperrecError("another digest job is running (its lock in Redis expires "
                                f"within {LOCK_SECONDS // 60} minutes); nothing was sent")
        summary = DigestSummary()
        try:
            users = [only_user] if only_user else list(self.subscriptions.subscribers())
            for user_id in tqdm(users, desc="digests", unit="user", disable=not progress):
                subscription = self.subscriptions.get(user_id)
                if subscription is None:
                    summary.skipped["not subscribed"] += 1
                    continue
                if not subscription.confirmed:  # the address has not agreed to digests
                    summary.skipped["address not confirmed"] += 1
                    continue
                self._send_one(mailer, subscription, now, summary)
        finally:
            mailer.close()
            if not mailer.dry_run:
                with redis_errors(), contextlib.suppress(LockError):  # expired: nothing to free
                    lock.release()
        return summary

    def _send_one(self, mailer: Mailer, sub: Subscription, now: float,
                  summary: DigestSummary) -> None:
        store = self.subscriptions
        period = period_of(sub.frequency, now)
        if store.digest_sent(sub.user_id, period):
            summary.skipped["already sent this period"] += 1
            return
        last = store.last_digest_at(sub.user_id)
        if last is not None and now - last < MIN_GAP_SECONDS[sub.frequency]:
            summary.skipped["sent too recently"] += 1
            return
        summary.due += 1
        # Everything served before, today's lists included: a digest never repeats a paper.
        reading = self.recommender.recommend(sub.user_id, sub.max_items, now=now,
                                             exclude_served=True, served_before=now,
                                             record=False,
                                             min_probability=sub.min_probability)
        if not reading.items:
            # A quiet period: new papers there were, none likely enough to be worth an email.
            why = "nothing above min_probability" if reading.left_out_as_unlikely else "nothing new"
            summary.skipped[why] += 1
            return
        papers = self.corpus.get_many([item.paper_id for item in reading.items])

        def link(action: Action, paper_id: str | None, list_id: str | None = None) -> str:
            token = self.links.sign(sub.user_id, action, paper_id, now, list_id)
            return f"{self.public_url}/v1/links/{token}"

        def digest_item(item: Recommendation, list_id: str) -> DigestItem:
            paper = papers.get(item.paper_id) or Paper(item.paper_id, item.title)
            return DigestItem(item_view(paper, title=item.title, reason=item.reason,
                                        standing=item.standing),
                              link("like", item.paper_id, list_id),
                              link("dislike", item.paper_id, list_id),
                              link("open", item.paper_id, list_id))

        items = [digest_item(item, reading.list_id) for item in reading.items]
        sections = self._sections(sub, now, {item.paper_id for item in reading.items})
        papers.update(self.corpus.get_many([item.paper_id for _, found in sections
                                            for item in found.items]))
        unsubscribe = link("unsubscribe", None)
        label = period if sub.frequency == "daily" else f"week of {_monday(now).isoformat()}"
        content = DigestContent(sub.user_id, items, unsubscribe, sub.frequency,
                                reading.personalized, label,
                                tuple(DigestSection(name, [digest_item(i, found.list_id)
                                                           for i in found.items])
                                      for name, found in sections),
                                self._zotero_notice(sub.user_id))
        # Fixed per user and period (user ids may hold "@", so they are hashed).
        user_hash = hashlib.sha256(sub.user_id.encode()).hexdigest()[:16]
        message_id = f"<digest.{user_hash}.{period}@paperrec>"
        message = render_digest(content, self.mail_from, sub.email, message_id, unsubscribe)
        try:
            mailer.send(message, f"{sub.user_id}-{period}")
        except (smtplib.SMTPException, OSError) as exc:
            summary.failed += 1
            log.error("digest for %s to %s failed: %s", sub.user_id, sub.email, exc)
            if not isinstance(exc, smtplib.SMTPRecipientsRefused):
                mailer.close()  # the connection may be broken; the next send reconnects
            return
        summary.sent += 1
        if not mailer.dry_run:
            store.record_digest(sub.user_id, period, now, message_id)
            self.feedback.record_served(sub.user_id, [item.paper_id for item in items] + [
                item.paper_id for section in content.sections for item in section.items], now)
        if self.events is not None:  # what was mailed: each list, as its links name it
            for served in [reading.served] + [found.served for _, found in sections]:
                if served is not None and served.papers:
                    self.events.served(replace(served, surface="digest"))

    def _sections(self, sub: Subscription, now: float,
                  shown: set[str]) -> list[tuple[str, ReadingList]]:
        """(name, list) of each of the reader's collections with liked papers: its list's
        new papers (those served before, and those of the overall list, left out), at most
        SECTION_ITEMS; each list's ``served`` is what the section shows."""
        if self.collections is None:
            return []
        found = []
        for collection in self.collections.all(sub.user_id):
            if not collection.size:
                continue
            reading = self.recommender.recommend(
                sub.user_id, min(sub.max_items, SECTION_ITEMS) + len(shown), now=now,
                exclude_served=True, record=False, min_probability=sub.min_probability,
                collection=collection.id)
            items = [item for item in reading.items if item.paper_id not in shown]
            items = items[:min(sub.max_items, SECTION_ITEMS)]
            if items:
                served = (None if reading.served is None else
                          reading.served.only([item.paper_id for item in items]))
                found.append((collection.name, replace(reading, items=items, served=served)))
        return found


def _acquire(lock: Lock) -> bool:
    with redis_errors():
        return bool(lock.acquire())

"""Everything stored about one user, to hand over (export) or to forget (erase).

The feedback store holds the user's signals and served history; other stores (the digest
subscriptions, the reader's rules, the feed URL) add their sections through
``UserDataSection``, so this package needs to know nothing about them. Erasing deletes every
key ``RedisKeys.user_keys`` names, in one transaction with the user's share of the like
counts (``FeedbackStore.erase_user``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from recommender.core.ids import PaperId
from recommender.feedback.store import Feedback, FeedbackStore


class UserDataSection(Protocol):
    def export_user(self, user_id: str) -> dict[str, Any]:
        """This store's part of a user's export, as named fields."""
        ...


@dataclass(frozen=True)
class Served:
    paper_id: PaperId
    at: float


@dataclass(frozen=True)
class UserExport:
    user_id: str
    feedback: list[Feedback]
    served: list[Served]  # when each paper was first served
    set_aside: list[Served]  # the papers set aside ("Not now"), with when
    sections: dict[str, Any]  # each further store's fields, e.g. subscription and digests


class UserData:
    def __init__(self, feedback: FeedbackStore, sections: Sequence[UserDataSection],
                 forget: Sequence[Callable[[str], object]] = ()) -> None:
        """``forget``: what else erasing a user calls with their id (e.g. the corpus forgets
        them as an uploader)."""
        self._feedback = feedback
        self._sections = sections
        self._forget = forget

    def export(self, user_id: str) -> UserExport:
        sections: dict[str, Any] = {}
        for section in self._sections:
            sections.update(section.export_user(user_id))
        served = [Served(pid, at) for pid, at in self._feedback.served_with_times(user_id)]
        set_aside = [Served(pid, at) for pid, at in self._feedback.set_aside_with_times(user_id)]
        return UserExport(user_id, self._feedback.get(user_id), served, set_aside, sections)

    def erase(self, user_id: str) -> None:
        """Forget the user: feedback, served history, papers set aside, subscription, digest
        records, rules, feed URL (which then stops working), browser sessions, and the papers
        only their uploads brought (``forget``)."""
        self._feedback.erase_user(user_id)
        for forget in self._forget:
            forget(user_id)

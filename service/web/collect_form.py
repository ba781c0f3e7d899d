"""What the "like into a collection" form under a list item needs
(templates/partials/_collect.html): shared by the list page and a collection's page."""

from __future__ import annotations

from typing import Any

from ..state import components


def collect_context(user: str, paper_ids: list[str]) -> dict[str, Any]:
    """The reader's collections and the ones each of these papers is in (one round trip)."""
    collections, collected = components().collections.with_memberships(user, paper_ids)
    return {"collections": collections, "collected": collected}

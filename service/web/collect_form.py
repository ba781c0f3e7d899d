"""What the "like into a collection" form under a list item needs
(templates/partials/_collect.html): shared by the list page and a collection's page."""

from __future__ import annotations

from typing import Any

from ..state import components


def collect_context(user: str, paper_ids: list[str]) -> dict[str, Any]:
    """The reader's collections and the ones each of these papers is in (one read each)."""
    parts = components()
    return {"collections": parts.collections.all(user),
            "collected": parts.collections.memberships(user, paper_ids)}

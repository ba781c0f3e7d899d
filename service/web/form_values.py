"""Values from a page's query string or form, checked as the API checks them: a value out of
range is an InvalidInput (a 400 page saying which field), never a crash."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from recommender.core.errors import InvalidInput


def optional_float(values: Mapping[str, str], name: str, low: float, high: float,
                   label: str) -> float | None:
    text = values.get(name, "").strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        raise InvalidInput(f"{label} must be a number from {low:g} to {high:g}") from None
    if not low <= number <= high:  # also NaN
        raise InvalidInput(f"{label} must be a number from {low:g} to {high:g}")
    return number


def integer(values: Mapping[str, str], name: str, low: int, high: int, default: int,
            label: str) -> int:
    text = values.get(name, "").strip()
    if not text:
        return default
    try:
        number = int(text)
    except ValueError:
        raise InvalidInput(f"{label} must be a whole number from {low} to {high}") from None
    if not low <= number <= high:
        raise InvalidInput(f"{label} must be a whole number from {low} to {high}")
    return number


def optional_date(values: Mapping[str, str], name: str, label: str) -> dt.date | None:
    text = values.get(name, "").strip()
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"{label} must be a date like 2026-11-01") from None


def flag(values: Mapping[str, str], name: str) -> bool:
    return values.get(name, "") in ("1", "on", "true", "yes")

"""A delegation attempt's :class:`~domain.usage.Usage` as receipts and the session's
``state.json`` write it: one key per category, ``null`` for a category no message ever
reported (never a made-up 0), whether the cost was estimated, and how many messages reported
usage (``reportedCalls``: the usage's turns)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain.usage import CATEGORIES, Category, Usage

# The row's key for each category.
KEYS: dict[Category, str] = {
    "input": "input",
    "output": "output",
    "cache_read": "cacheRead",
    "cache_write": "cacheWrite",
    "cost": "cost",
}
ESTIMATED = "costEstimated"
CALLS = "reportedCalls"


def usage_row(usage: Usage) -> dict[str, Any]:
    """One request's usage as ``usage.perRequest`` shows it."""
    row: dict[str, Any] = {
        KEYS[category]: usage.reported_value(category) for category in CATEGORIES
    }
    row[ESTIMATED] = usage.cost_estimated
    return row


def usage_totals(usage: Usage) -> dict[str, Any]:
    """A sum of requests' usage: the row and how many requests reported usage."""
    return {**usage_row(usage), CALLS: usage.turns}


def usage_from_totals(row: Mapping[str, Any]) -> Usage:
    """The usage a :func:`usage_totals` row describes; ``ValueError`` for any other shape."""
    expected = {*KEYS.values(), ESTIMATED, CALLS}
    if set(row) != expected:
        raise ValueError(f"a usage row has exactly the keys {sorted(expected)}")
    counts = {category: row[KEYS[category]] for category in CATEGORIES}
    for category, value in counts.items():
        wrong = category != "cost" and type(value) is not int
        if value is not None and (wrong or type(value) not in (int, float)):
            raise ValueError(f"usage {KEYS[category]}: {value!r} is not a count")
    if type(row[ESTIMATED]) is not bool or type(row[CALLS]) is not int:
        raise ValueError("usage costEstimated is a boolean and reportedCalls an integer")
    return Usage(
        input_tokens=counts["input"] or 0,
        output_tokens=counts["output"] or 0,
        cache_read_tokens=counts["cache_read"] or 0,
        cache_write_tokens=counts["cache_write"] or 0,
        cost=float(counts["cost"] or 0.0),
        turns=row[CALLS],
        cost_estimated=row[ESTIMATED],
        reported=frozenset(category for category, value in counts.items() if value is not None),
    )

"""A record's JSON object: each field under its camelCase key, in field order."""

from __future__ import annotations

import attrs

from domain.names import camel_fields


@attrs.frozen
class Limits:
    max_cost_usd: float
    deadline_ms: int
    label: str | None = None
    ids: tuple[str, ...] = ()


def test_each_field_stands_under_its_camel_case_key_in_field_order() -> None:
    document = camel_fields(Limits(0.5, 60_000, ids=("a",)))
    assert list(document) == ["maxCostUsd", "deadlineMs", "label", "ids"]
    assert document == {"maxCostUsd": 0.5, "deadlineMs": 60_000, "label": None, "ids": ("a",)}

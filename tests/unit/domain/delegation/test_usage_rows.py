"""A delegation attempt's usage as receipts and ``state.json`` show it: the one ``Usage``
value, with a category never reported as ``null`` rather than a made-up 0."""

from __future__ import annotations

import pytest

from domain.delegation.usage_rows import usage_from_totals, usage_row, usage_totals
from domain.usage import Usage

NOTHING = {
    "input": None,
    "output": None,
    "cacheRead": None,
    "cacheWrite": None,
    "cost": None,
    "costEstimated": False,
}


def test_a_message_that_reported_nothing_is_all_null_and_no_reported_call() -> None:
    assert usage_row(Usage()) == NOTHING
    assert usage_totals(Usage()) == {**NOTHING, "reportedCalls": 0}


def test_a_sum_reports_only_the_categories_some_message_reported() -> None:
    first = Usage.turn(input_tokens=10, output_tokens=2, cache_read_tokens=3, cost=0.5)
    second = Usage.turn(input_tokens=0, output_tokens=1, cost=0.25, cost_estimated=True)
    total = first.plus(second).plus(Usage())
    assert usage_totals(total) == {
        "input": 10,
        "output": 3,
        "cacheRead": 3,
        "cacheWrite": None,
        "cost": 0.75,
        "costEstimated": True,
        "reportedCalls": 2,
    }


@pytest.mark.parametrize(
    "usage",
    [
        Usage(),
        Usage.turn(input_tokens=0),
        Usage.turn(input_tokens=4, output_tokens=5, cache_write_tokens=6, cost=0.0),
    ],
)
def test_a_row_reads_back_as_the_usage_it_shows(usage: Usage) -> None:
    assert usage_from_totals(usage_totals(usage)) == usage


@pytest.mark.parametrize(
    "row",
    [
        {**NOTHING},  # no reportedCalls
        {**NOTHING, "reportedCalls": 0, "extra": 1},
        {**NOTHING, "reportedCalls": 0, "input": "10"},
        {**NOTHING, "reportedCalls": 0, "output": 1.5},
        {**NOTHING, "reportedCalls": 0, "costEstimated": None},
    ],
)
def test_a_row_of_any_other_shape_is_refused(row: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="usage"):
        usage_from_totals(row)

"""The one ``Usage`` value every face adds up: a message's usage says which categories were
reported, sums keep plain numbers and the union of what was reported, and a category never
reported reads as unknown (``None``), not 0."""

from __future__ import annotations

import pytest

from domain.usage import CATEGORIES, Usage


def test_a_turn_counts_one_message_and_names_the_categories_it_reported() -> None:
    turn = Usage.turn(input_tokens=10, output_tokens=5, cost=0.25)
    assert (turn.input_tokens, turn.output_tokens, turn.cost, turn.turns) == (10, 5, 0.25, 1)
    assert turn.reported == frozenset({"input", "output", "cost"})
    assert (turn.cache_read_tokens, turn.reported_value("cache_read")) == (0, None)


def test_a_message_that_reported_nothing_is_one_turn_with_every_category_unknown() -> None:
    turn = Usage.turn()
    assert turn.turns == 1
    assert all(turn.reported_value(category) is None for category in CATEGORIES)


def test_sums_add_figures_and_turns_and_keep_every_category_any_message_reported() -> None:
    first = Usage.turn(input_tokens=10, output_tokens=5, cache_read_tokens=3, cost=0.5)
    second = Usage.turn(input_tokens=20, output_tokens=1, cost=0.25, cost_estimated=True)
    total = first.plus(second)
    assert (total.input_tokens, total.output_tokens, total.turns) == (30, 6, 2)
    assert total.cost == pytest.approx(0.75)
    assert total.reported_value("cache_read") == 3  # reported once: the sum is what was reported
    assert total.reported_value("cache_write") is None
    assert total.cost_estimated, "one estimated cost makes the sum an estimate"
    assert Usage().plus(first) == first

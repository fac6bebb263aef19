"""Honest labels: which layers held for every child, and what ``--require-isolation`` refuses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.isolation import isolation_statement
from domain.isolation_level import (
    IsolationLevel,
    layers_after_spawn,
    layers_statement,
    parse_level,
    signal_isolation_problem,
)

levels = st.builds(
    IsolationLevel,
    namespaces=st.booleans(),
    landlock_abi=st.one_of(st.none(), st.integers(min_value=3, max_value=12)),
)


@pytest.mark.parametrize(
    ("level", "label"),
    [
        (IsolationLevel(True, 7), "namespaces+landlock(ABI 7, scoped)"),
        (IsolationLevel(True, 5), "namespaces+landlock(ABI 5, unscoped signals)"),
        (IsolationLevel(False, 6), "landlock(ABI 6, scoped)"),
        (IsolationLevel(False, 4), "landlock(ABI 4, unscoped signals)"),
        (IsolationLevel(True, None), "namespaces"),
        (IsolationLevel(False, None), "none"),
    ],
)
def test_the_label_names_each_layer(level: IsolationLevel, label: str) -> None:
    assert level.label == label
    assert parse_level(label) == level


@given(levels)
def test_every_label_reads_back_as_its_level(level: IsolationLevel) -> None:
    assert parse_level(level.label) == level


@pytest.mark.parametrize(
    "label",
    ["landlock", "landlock(ABI 7)", "namespaceslandlock(ABI 7, scoped)", "landlock(ABI 7, scoped)x",
     "landlock(ABI 5, scoped)", "landlock(ABI 7, unscoped signals)", "", "Namespaces"],
)  # fmt: skip
def test_anything_else_is_no_level(label: str) -> None:
    assert parse_level(label) is None


@given(levels, levels)
def test_the_meet_keeps_only_what_held_for_both(a: IsolationLevel, b: IsolationLevel) -> None:
    met = a.meet(b)
    assert met == b.meet(a)
    assert met.namespaces == (a.namespaces and b.namespaces)
    if a.landlock_abi is None or b.landlock_abi is None:
        assert met.landlock_abi is None
    else:
        assert met.landlock_abi == min(a.landlock_abi, b.landlock_abi)
    assert met.stops_signals <= (a.stops_signals and b.stops_signals)


def test_a_squad_records_the_weakest_level_any_child_ran_under() -> None:
    first = layers_after_spawn(None, None, IsolationLevel(True, 7))
    assert first == "namespaces+landlock(ABI 7, scoped)"
    second = layers_after_spawn("landlock", first, IsolationLevel(False, 5))
    assert second == "landlock(ABI 5, unscoped signals)"
    assert layers_after_spawn("landlock", second, IsolationLevel(True, 7)) == second, "sticky"
    # Children that ran before layers were recorded: what held for them is unknown, for good.
    assert layers_after_spawn("landlock", None, IsolationLevel(True, 7)) is None


@pytest.mark.parametrize(
    ("level", "refused"),
    [
        (IsolationLevel(False, 5), True),
        (IsolationLevel(False, 3), True),
        (IsolationLevel(True, 5), False),
        (IsolationLevel(False, 6), False),
        (IsolationLevel(True, 7), False),
    ],
)
def test_require_isolation_refuses_unscoped_landlock_unless_namespaces_cover_it(
    level: IsolationLevel, refused: bool
) -> None:
    problem = signal_isolation_problem(level)
    assert (problem is not None) == refused
    if problem is not None:
        assert level.label in problem
        assert "apt-get install bubblewrap" in problem


def test_the_statement_names_the_layers_and_what_they_leave_open() -> None:
    strong = isolation_statement("landlock", "namespaces+landlock(ABI 7, scoped)")
    assert strong.startswith("landlock: every child ran under kernel write isolation")
    assert "layers that held for every child: namespaces+landlock(ABI 7, scoped)" in strong
    assert "its whole tree ended with its task" in strong
    weak = isolation_statement("landlock", "landlock(ABI 4, unscoped signals)")
    assert "Landlock ABI 4 could not scope signals" in weak
    assert "a child could signal processes outside its own tree" in weak
    assert "layers that held for every child: none" in isolation_statement("none", "none")
    assert "were not recorded" in isolation_statement("landlock", None)
    assert isolation_statement(None) == "not yet decided: no child has run"
    assert layers_statement(None, None) is None

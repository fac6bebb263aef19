"""The one reserved-name rule for squad and task IDs (red-team issue 11, finding 6)."""

from __future__ import annotations

import pytest

from domain.squad.ids import (
    ROOT_ENTRIES,
    SQUAD_DIR_ENTRIES,
    derive_squad_id,
    reserved_name_problem,
    reserved_squad_id_problem,
    reserved_task_id_problem,
    squad_id_problem,
)

DIGEST = "0123456789abcdef" * 4
DEVICE_NAMES = [
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{digit}" for digit in range(1, 10)),
    *(f"lpt{digit}" for digit in range(1, 10)),
]


@pytest.mark.parametrize(
    "name",
    [*DEVICE_NAMES, "CON", "Nul", "cOm1", "LPT9", "con.txt", "Aux.tar.gz", "nul.", "com0"],
)
def test_windows_device_names_are_reserved_in_any_case_and_with_any_extension(
    name: str,
) -> None:
    for entries in (ROOT_ENTRIES, SQUAD_DIR_ENTRIES, frozenset[str]()):
        assert reserved_name_problem(name, entries) == (
            "it is a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)"
        )


@pytest.mark.parametrize("name", ["spec", "Spec", "SPEC", "session", "Session", "Knowledge"])
def test_squad_directory_entries_are_reserved_task_ids_in_any_case(name: str) -> None:
    assert reserved_task_id_problem(name) == (
        "it names a reserved directory entry (knowledge, session, spec)"
    )


@pytest.mark.parametrize("name", ["agents", "Agents", "KNOWLEDGE"])
def test_root_entries_are_reserved_squad_ids_in_any_case(name: str) -> None:
    assert (
        reserved_squad_id_problem(name) == "it names a reserved directory entry (agents, knowledge)"
    )


@pytest.mark.parametrize(
    "name", ["console", "con-1", "com", "com10", "lpt", "auxiliary", "specs", "nullable", "build"]
)
def test_names_that_only_resemble_reserved_ones_are_free(name: str) -> None:
    assert reserved_task_id_problem(name) is None
    assert reserved_squad_id_problem(name) is None


@pytest.mark.parametrize("goal", ["con", "NUL", "Lpt1", "aux!", "  com9  "])
def test_a_goal_that_slugs_to_a_device_name_gets_the_hash_based_id(goal: str) -> None:
    assert derive_squad_id(goal, DIGEST) == f"squad-{DIGEST[:12]}"


def test_a_goal_resembling_a_device_name_keeps_its_slug() -> None:
    assert derive_squad_id("Console output", DIGEST) == "console-output"


@pytest.mark.parametrize(
    ("squad_id", "problem"),
    [
        ("ship-it", None),
        ("console", None),
        ("Ship", "a squad id is 1-128 lowercase letters, digits and inner hyphens"),
        ("../x", "a squad id is 1-128 lowercase letters, digits and inner hyphens"),
        (
            "con",
            "'con' is reserved: it is a Windows device name (con, prn, aux, nul, com0-com9, "
            "lpt0-lpt9)",
        ),
        ("agents", "'agents' is reserved: it names a reserved directory entry (agents, knowledge)"),
    ],
)
def test_squad_id_problem_is_the_pattern_then_the_reserved_names(
    squad_id: str, problem: str | None
) -> None:
    assert squad_id_problem(squad_id) == problem

"""Which write grants a confined child may have: nothing that contains the squad root, and
nothing inside it but the task's own ledger directory."""

from __future__ import annotations

import pytest

from domain.isolation import grant_problem, isolation_statement

ROOT = "/home/u/.pi/squad"
LEDGER = "/home/u/.pi/squad/s1/build"


def problem(*grants: str) -> str | None:
    return grant_problem(grants, squad_root=ROOT, ledger_dir=LEDGER, flavour="posix")


def test_the_ordinary_grants_are_allowed() -> None:
    assert problem(LEDGER, "/home/u/project", "/tmp/pi-squad-child-x", "/home/u/.pi/agent") is None
    assert problem(f"{LEDGER}/session") is None


@pytest.mark.parametrize("grant", ["/home/u", "/home", "/", "/home/u/.pi", ROOT, f"{ROOT}/"])
def test_a_grant_that_contains_the_squad_root_is_refused(grant: str) -> None:
    found = problem(grant)
    assert found is not None
    assert "contains the squad root" in found
    assert "PI_SQUAD_ROOT" in found, "says what to do"


@pytest.mark.parametrize(
    "grant", [f"{ROOT}/s1", f"{ROOT}/s1/docs", f"{ROOT}/s1/.records/build", f"{ROOT}/s2/build"]
)
def test_a_grant_inside_the_squad_root_other_than_the_own_ledger_is_refused(grant: str) -> None:
    found = problem(grant)
    assert found is not None
    assert "inside the squad root" in found or "contains the squad root" in found


def test_names_sharing_a_prefix_are_not_ancestors_or_descendants() -> None:
    assert problem("/home/u/.pi/squad-other") is None, "a sibling of the root, not an ancestor"
    assert problem(f"{ROOT}/s1/buildx") is not None, "not the ledger build/, a sibling task"


def test_a_relative_grant_is_refused() -> None:
    assert problem("project") == "the write grant 'project' is not an absolute path"


def test_the_statement_says_plainly_what_each_mode_means() -> None:
    assert "no child could write squad records" in isolation_statement("landlock")
    assert "a child could have written squad records" in isolation_statement("none")
    assert "no child has run" in isolation_statement(None)

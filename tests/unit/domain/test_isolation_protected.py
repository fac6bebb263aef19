"""No write grant may reach the code pi-squad and a child's start run (issue 28, break 3):
``domain.isolation.protected_path_problem``, the pure rule over resolved paths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.isolation import ProtectedPath, protected_path_problem

VENV = ProtectedPath(
    "/home/u/app/.venv", "the virtual environment pi-squad runs in", "install it elsewhere"
)
PYTHON = ProtectedPath(
    "/usr/bin/python3.12", "the Python interpreter running pi-squad", "install it elsewhere"
)
IMPORT_ROOT = ProtectedPath(
    "/home/u/src/pi-squad", "a directory pi-squad imports from", "install it elsewhere"
)
PROTECTED = (VENV, PYTHON, IMPORT_ROOT)


def problem(*grants: str) -> str | None:
    return protected_path_problem(grants, PROTECTED, flavour="posix")


def test_a_normal_project_ledger_and_scratch_are_allowed() -> None:
    assert problem("/home/u/work/project", "/tmp/pi-squad-child-x", "/home/u/.pi/squad/s/t") is None


@pytest.mark.parametrize(
    ("grant", "named"),
    [
        ("/home/u/app", VENV.path),  # a project holding its own .venv with pi-squad
        ("/home/u/app/.venv", VENV.path),  # equal
        ("/home/u", VENV.path),
        ("/", VENV.path),
        ("/usr/bin", PYTHON.path),
        ("/usr/bin/python3.12", PYTHON.path),
        ("/home/u/src/pi-squad", IMPORT_ROOT.path),  # the project IS a pi-squad checkout
        ("/home/u/src", IMPORT_ROOT.path),
    ],
)
def test_a_grant_that_is_or_contains_protected_code_is_refused(grant: str, named: str) -> None:
    found = problem(grant)
    assert found is not None
    assert found.startswith(f"the write grant {grant} contains ")
    assert f"({named})" in found, "names the path"
    assert found.endswith("; install it elsewhere"), "says the way out"


@pytest.mark.parametrize(
    "grant", ["/home/u/app/.venv/lib", "/home/u/app/.venv/bin/x", "/home/u/src/pi-squad/examples"]
)
def test_a_grant_inside_a_directory_of_code_is_refused(grant: str) -> None:
    """Anything written there is code too (a module beside pi-squad's, a ``.pth`` file)."""
    found = problem(grant)
    assert found is not None
    assert found.startswith(f"the write grant {grant} lies inside ")


def test_names_sharing_a_prefix_are_neither_inside_nor_containing() -> None:
    assert problem("/home/u/app/.venv2", "/home/u/app/.ven", "/usr/bin/python3.12-x") is None
    assert problem("/home/u/src/pi-squad-work") is None


def test_a_relative_grant_is_refused_and_a_relative_protected_path_matches_nothing() -> None:
    assert problem("project") == "the write grant 'project' is not an absolute path"
    relative = ProtectedPath("app/.venv", "x", "y")
    assert protected_path_problem(["/home/u/app"], [relative], flavour="posix") is None


def test_spellings_are_normalised_before_comparing() -> None:
    """The caller resolves symbolic links; ``.``/``..``, repeats and a trailing slash are the
    rule's own to fold."""
    assert problem("/home/u/./work/../app/") is not None
    assert problem("/home//u/app/.venv/") is not None


def test_nothing_protected_refuses_nothing() -> None:
    assert protected_path_problem(["/"], [], flavour="posix") is None


NAMES = st.sampled_from(["a", "b", "ab", ".venv", "lib", "node_modules"])
PATHS = st.lists(NAMES, min_size=0, max_size=4).map(lambda names: "/" + "/".join(names))


@given(grant=PATHS, code=PATHS)
def test_refused_exactly_when_one_path_lies_within_the_other(grant: str, code: str) -> None:
    """By components: the grant is the code, contains it, or lies inside it."""
    found = protected_path_problem([grant], [ProtectedPath(code, "code", "fix")], flavour="posix")
    grant_parts = [p for p in grant.split("/") if p]
    code_parts = [p for p in code.split("/") if p]
    shorter = min(len(grant_parts), len(code_parts))
    assert (found is not None) == (grant_parts[:shorter] == code_parts[:shorter])

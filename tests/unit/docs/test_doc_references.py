"""What the documents point at must exist. They map rules to tests by node id
(``tests/x.py::test_y``) and name the code that decides by path (``application/child/role.py``,
``domain/spec/parse.parse_spec``); a reference to a test or a module that no longer exists would
vouch for nothing, and a path outside the repository is one no reader of the repository has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DOCUMENTS = sorted((REPO / "docs").rglob("*.md"))
PAGES = [REPO / "README.md", *DOCUMENTS]
REFERENCE = re.compile(r"(tests/[\w/]+\.py)::(test_\w+)")
EXAMPLE = "tests/path.py"  # the conformance guide's illustration of the format
# A repository path in backticks: a file or directory of one of the project's trees, or a
# module followed by the dotted name of something in it (``domain/spec/parse.parse_spec``).
REPO_PATH = re.compile(
    r"`((?:domain|application|adapters|entrypoints|tests|bench|scripts|examples)/[\w/.\-]*)"
    r"(?:::\w+)?`"
)
OUTSIDE = re.compile(r"/work/|\.\./shared|shared/(?:seeds|reference|design)/")


def page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


def references(document: Path) -> list[tuple[str, str]]:
    found = REFERENCE.findall(document.read_text(encoding="utf-8"))
    return sorted({(path, name) for path, name in found if path != EXAMPLE})


def names_something_real(cited: str) -> bool:
    """A file or directory, or ``module.attribute`` whose module (or package) exists."""
    if cited == EXAMPLE or (REPO / cited).exists():
        return True
    parts = cited.rstrip("/").split(".")
    modules = (".".join(parts[:n]) for n in range(len(parts), 0, -1))
    return any(
        (REPO / f"{module}.py").is_file() or (REPO / module / "__init__.py").is_file()
        for module in modules
    )


@pytest.mark.parametrize("document", DOCUMENTS, ids=page_id)
def test_every_test_a_document_names_exists(document: Path) -> None:
    missing = [
        f"{path}::{name}"
        for path, name in references(document)
        if not (REPO / path).is_file()
        or not re.search(rf"^\s*def {name}\(", (REPO / path).read_text(encoding="utf-8"), re.M)
    ]
    assert missing == [], f"{document.name} names tests that do not exist"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_repository_path_a_page_names_exists(page: Path) -> None:
    cited = sorted(set(REPO_PATH.findall(page.read_text(encoding="utf-8"))))
    assert [path for path in cited if not names_something_real(path)] == []


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_page_points_outside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert [m.group(0) for m in OUTSIDE.finditer(text)] == []


def test_a_moved_module_is_caught() -> None:
    assert names_something_real("domain/spec/parse.parse_spec")
    assert names_something_real("application/squads/")
    assert names_something_real("application/squads/scheduler.Scheduler")
    assert not names_something_real("application/no_such_module.run")


def test_the_conformance_map_names_tests_at_all() -> None:
    assert len(references(REPO / "docs" / "conformance.md")) > 100

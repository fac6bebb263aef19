"""The documents map rules to tests by node id (``tests/x.py::test_y``); a reference to a test
that no longer exists would vouch for nothing, so each must name a test function that does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DOCUMENTS = sorted((REPO / "docs").glob("*.md"))
REFERENCE = re.compile(r"(tests/[\w/]+\.py)::(test_\w+)")
EXAMPLE = "tests/path.py"  # the conformance guide's illustration of the format


def references(document: Path) -> list[tuple[str, str]]:
    found = REFERENCE.findall(document.read_text(encoding="utf-8"))
    return sorted({(path, name) for path, name in found if path != EXAMPLE})


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_test_a_document_names_exists(document: Path) -> None:
    missing = [
        f"{path}::{name}"
        for path, name in references(document)
        if not (REPO / path).is_file()
        or not re.search(rf"^\s*def {name}\(", (REPO / path).read_text(encoding="utf-8"), re.M)
    ]
    assert missing == [], f"{document.name} names tests that do not exist"


def test_the_conformance_map_names_tests_at_all() -> None:
    assert len(references(REPO / "docs" / "conformance.md")) > 100

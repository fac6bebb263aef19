"""Links between the documents land: the page exists and, when the link names a section, the
page has a heading by that name (GitHub's anchor for it). A section renamed or moved to a
reference page without its links following fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercased, punctuation but ``-`` and ``_`` dropped,
    spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        name = anchor(heading)
        seen = counts.get(name, 0)
        counts[name] = seen + 1
        found.add(name if seen == 0 else f"{name}-{seen}")
    return found


def links(page: Path) -> list[str]:
    prose = CODE_SPAN.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return [target for target in LINK.findall(prose) if not re.match(r"[a-z]+:", target)]


def broken(page: Path) -> list[str]:
    found = []
    for target in links(page):
        path, _, section = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            found.append(f"{target}: no such file")
        elif section and linked.suffix == ".md" and section not in anchors(linked):
            found.append(f"{target}: no such section")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_lands_on_a_page_and_a_section_it_has(page: Path) -> None:
    assert broken(page) == []


def test_the_anchor_of_a_heading_is_githubs() -> None:
    assert anchor("`pi-squad run`") == "pi-squad-run"
    assert anchor("6. Review, audit, report") == "6-review-audit-report"


def test_a_link_to_a_missing_section_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Kept\n\nSee [kept](#kept) and [gone](#gone).\n", "utf-8")
    assert broken(page) == ["#gone: no such section"]

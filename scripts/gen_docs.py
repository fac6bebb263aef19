"""Writes the generated regions of the documents from the code's own schemas and catalogues.

A region sits between ``<!-- BEGIN GENERATED: NAME ... -->`` and ``<!-- END GENERATED: NAME -->``
and is never edited by hand: ``tests/unit/docs/test_generated_docs.py`` fails when a committed
page differs from what this script writes. Run from the repository root:
``uv run python scripts/gen_docs.py`` (``--check`` only reports the pages that differ).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import docgen_errors
import docgen_fields

from domain.spec import limits

REPO = Path(__file__).resolve().parents[1]

# (label, value) of every contract §4 limit, in the order the spec guide explains them.
SPEC_LIMITS: tuple[tuple[str, int], ...] = (
    ("the spec file", limits.MAX_SPEC_BYTES),
    ("`goal`", limits.MAX_GOAL_BYTES),
    ("one task `title`", limits.MAX_TITLE_BYTES),
    ("one task `description`", limits.MAX_DESCRIPTION_BYTES),
    (
        "`goal` + all titles + all descriptions + all artifact purposes",
        limits.MAX_CUMULATIVE_TEXT_BYTES,
    ),
    ("one artifact `path`", limits.MAX_ARTIFACT_PATH_BYTES),
    ("tasks", limits.MAX_TASKS),
    ("agents", limits.MAX_AGENTS),
    ("artifacts", limits.MAX_ARTIFACTS),
)


def spec_limits() -> str:
    lines = ["| Item | Limit |", "|---|---:|"]
    lines += [f"| {label} | {value:,} |" for label, value in SPEC_LIMITS]
    run = limits.MAX_ENCODED_RUN_CHARS
    lines.append(
        "| a Base64/data-URI-like run inside `goal`, `title`, `description` or `purpose` "
        f"| {run:,} characters |"
    )
    return "\n".join(lines) + "\n"


def delegation_errors() -> str:
    lines = docgen_errors.delegation_table()
    lines.append(
        "| `RECORD_CORRUPT`, `IO_FAILED` | the session state does not decode; the OS refused a "
        "write (nothing half-written) |"
    )
    return "\n".join(lines) + "\n"


Renderer = Callable[[], str]
PAGES: Mapping[str, Mapping[str, Renderer]] = {
    "docs/reference/errors.md": {"errors": docgen_errors.render},
    "docs/reference/fields.md": {"fields": docgen_fields.render},
    "docs/reference/spec.md": {"spec-limits": spec_limits},
    "docs/delegation.md": {"delegation-errors": delegation_errors},
}


def region(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- BEGIN GENERATED: {re.escape(name)} [^\n]*-->\n)(.*?)(<!-- END GENERATED: "
        rf"{re.escape(name)} -->)",
        re.S,
    )


def updated(text: str, renderers: Mapping[str, Renderer]) -> str:
    """``text`` with each named region replaced by its renderer's output; a page that lacks
    one of its regions is an error, never silently left as it was."""
    for name, render in renderers.items():
        match = region(name).search(text)
        if match is None:
            raise SystemExit(f"gen_docs: no generated region {name!r}")
        text = text[: match.start(2)] + render() + text[match.end(2) :]
    return text


def stale_pages() -> list[str]:
    return [
        page
        for page, renderers in PAGES.items()
        if (text := (REPO / page).read_text("utf-8")) != updated(text, renderers)
    ]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = stale_pages()
        for page in stale:
            print(f"{page}: differs from scripts/gen_docs.py's output")
        return 1 if stale else 0
    for page, renderers in PAGES.items():
        path = REPO / page
        path.write_text(updated(path.read_text("utf-8"), renderers), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Markdown files with front matter: flow presets and pi-flows' agent files.

The front matter is a ``---`` line, flat ``key: value`` lines, a closing ``---`` line; the body
is everything after. Flat scalars are all these files use, so this is not YAML: no nesting,
anchors, tags or multi-line values, which keeps what a file can mean to what it visibly says
(a YAML library would read ``tools: [read]`` or ``on: yes`` in ways a reader may not expect).
A value wrapped in one pair of matching quotes is unwrapped, as front matter is often written.
"""

from __future__ import annotations

from collections.abc import Collection

import attrs

FENCE = "---"


class FrontMatterInvalid(ValueError):
    """Why a file's front matter cannot be read. Never quotes the file's values."""


@attrs.frozen
class FrontMatter:
    fields: dict[str, str]
    body: str


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def split_front_matter(text: str, allowed: Collection[str]) -> FrontMatter:
    """The fields and the body of ``text``; each key must be one of ``allowed`` and appear
    once, blank lines and ``#`` comments in the front matter are skipped."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != FENCE:
        raise FrontMatterInvalid(f"does not start with a {FENCE} front matter line")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == FENCE), None)
    if end is None:
        raise FrontMatterInvalid(f"the front matter has no closing {FENCE} line")
    fields: dict[str, str] = {}
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, colon, value = line.partition(":")
        key = key.strip()
        if not colon or not key:
            raise FrontMatterInvalid(f"front matter line {number} is not 'key: value'")
        if key not in allowed:
            raise FrontMatterInvalid(
                f"front matter line {number}: unknown key (allowed: {', '.join(sorted(allowed))})"
            )
        if key in fields:
            raise FrontMatterInvalid(f"front matter line {number}: {key} is given twice")
        fields[key] = _unquoted(value.strip())
    return FrontMatter(fields, "\n".join(lines[end + 1 :]))

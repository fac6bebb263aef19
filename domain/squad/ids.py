"""Squad and task identifiers (contract §5, upstream ``makeTaskId``)."""

from __future__ import annotations

import re

SQUAD_ID_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?\Z")
TASK_ID_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\Z")
# Any task directory name: inline (legacy) squads are not held to the file-squad pattern, but a
# task ID never becomes a path that leaves the squad directory (no separators, no dot names).
SAFE_TASK_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_SLUG_MAX = 40
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def make_task_id(text: str) -> str:
    """Upstream ``makeTaskId``: lowercase, runs of other characters to ``-``, trimmed, 40 max."""
    slug = _NOT_SLUG.sub("-", text.lower()).strip("-")
    return slug[:_SLUG_MAX].rstrip("-")


def derive_squad_id(goal: str, spec_sha256: str) -> str:
    """``makeTaskId(goal)`` when it yields a path-safe ID, else ``squad-<12 hex of the hash>``."""
    slug = make_task_id(goal)
    if slug and SQUAD_ID_PATTERN.match(slug):
        return slug
    return f"squad-{spec_sha256[:12]}"


def base36(number: int) -> str:
    if number < 0:
        raise ValueError("base36 of a negative number")
    digits = []
    while True:
        number, remainder = divmod(number, 36)
        digits.append(_BASE36[remainder])
        if number == 0:
            return "".join(reversed(digits))


def with_unique_suffix(base: str, suffix: str) -> str:
    """``<base>-<suffix>``, shortened at the base (never the suffix) to stay a valid squad ID."""
    room = 128 - len(suffix) - 1
    candidate = f"{base[:room].rstrip('-')}-{suffix}"
    if not SQUAD_ID_PATTERN.match(candidate):
        raise ValueError("suffix does not make a valid squad id")
    return candidate

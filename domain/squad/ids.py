"""Squad and task identifiers (contract §5, upstream ``makeTaskId``)."""

from __future__ import annotations

import re

SQUAD_ID_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?\Z")
TASK_ID_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\Z")
# Any task directory name: inline (legacy) squads are not held to the file-squad pattern, but a
# task ID never becomes a path that leaves the squad directory (no separators, no dot names).
SAFE_TASK_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
# Names a directory can never safely take on Windows, whatever the case or extension (``con``,
# ``Con.txt``): opening one reaches a device, not a file. COM0 and LPT0 are included, as recent
# Windows versions reserve them too. Refused on every platform, so a squad moves between them.
WINDOWS_DEVICE_NAMES = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{digit}" for digit in range(10)}
    | {f"lpt{digit}" for digit in range(10)}
)
# The squad root's own entries, which no squad may shadow.
ROOT_ENTRIES = frozenset({"agents", "knowledge"})
# A squad directory's own entries (the canonical spec directory, and names the store skips when
# it lists tasks), which no task may shadow.
SQUAD_DIR_ENTRIES = frozenset({"spec", "session", "knowledge"})
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_SLUG_MAX = 40
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def reserved_name_problem(name: str, entries: frozenset[str]) -> str | None:
    """Why ``name`` may not name a directory beside ``entries``, or ``None``.

    The one reserved-name rule: ``entries`` is ``ROOT_ENTRIES`` for a squad ID and
    ``SQUAD_DIR_ENTRIES`` for a task ID. Compared case-insensitively on every platform (case-
    insensitive volumes would otherwise let ``Spec`` shadow ``spec``); a Windows device name is
    refused with any extension.
    """
    folded = name.casefold()
    if folded.split(".", 1)[0].rstrip(" ") in WINDOWS_DEVICE_NAMES:
        return "it is a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)"
    if folded in entries:
        return f"it names a reserved directory entry ({', '.join(sorted(entries))})"
    return None


def reserved_task_id_problem(task_id: str) -> str | None:
    """Why ``task_id`` may not name a task directory (any case), or ``None``."""
    return reserved_name_problem(task_id, SQUAD_DIR_ENTRIES)


def reserved_squad_id_problem(squad_id: str) -> str | None:
    """Why ``squad_id`` may not name a squad directory (any case), or ``None``."""
    return reserved_name_problem(squad_id, ROOT_ENTRIES)


def squad_id_problem(squad_id: str) -> str | None:
    """Why ``squad_id`` is no squad's id (malformed, or a name ``create`` never gives), or
    ``None``: the one check for every path from an id to a squad directory."""
    if not SQUAD_ID_PATTERN.match(squad_id):
        return "a squad id is 1-128 lowercase letters, digits and inner hyphens"
    reserved = reserved_squad_id_problem(squad_id)
    return None if reserved is None else f"'{squad_id}' is reserved: {reserved}"


def make_task_id(text: str) -> str:
    """Upstream ``makeTaskId``: lowercase, runs of other characters to ``-``, trimmed, 40 max."""
    slug = _NOT_SLUG.sub("-", text.lower()).strip("-")
    return slug[:_SLUG_MAX].rstrip("-")


def derive_squad_id(goal: str, spec_sha256: str) -> str:
    """``makeTaskId(goal)`` when it yields a path-safe ID, else ``squad-<12 hex of the hash>``.

    A Windows device name (``con``, ``lpt1`` ...) is not path-safe. The root's own entries
    (``agents``, ``knowledge``) are, as a base: publication suffixes them.
    """
    slug = make_task_id(goal)
    problem = reserved_name_problem(slug, frozenset())
    if slug and SQUAD_ID_PATTERN.match(slug) and problem is None:
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

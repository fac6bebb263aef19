"""What a person types for a squad: its full id, or a prefix that only one squad starts with."""

from __future__ import annotations

from collections.abc import Sequence

from domain.errors import ErrorCode, NotFoundError

MAX_LISTED = 5


def expand_squad_prefix(reference: str, squad_ids: Sequence[str]) -> str:
    """The squad id ``reference`` stands for among ``squad_ids`` (oldest first): itself when it
    is an id or matches none (the store then says what is wrong with it), else the one id that
    starts with it. ``SQUAD_AMBIGUOUS`` when several do, listing them newest first."""
    if not reference or reference in squad_ids:
        return reference
    matches = [squad_id for squad_id in reversed(squad_ids) if squad_id.startswith(reference)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        return reference
    shown = ", ".join(matches[:MAX_LISTED])
    more = f" and {len(matches) - MAX_LISTED} more" if len(matches) > MAX_LISTED else ""
    raise NotFoundError(
        ErrorCode.SQUAD_AMBIGUOUS,
        f"squad id prefix {reference!r} matches {len(matches)} squads ({shown}{more}); type "
        "more of the id",
    )

"""Which of the main Pi's session events are task navigation (seed §6, statement 46).

Pi 0.80.10's session events (``dist/core/extensions/types.d.ts``, ``SessionEvent``):
``session_start``, ``session_info_changed``, ``session_before_switch`` (reason ``new`` |
``resume``), ``session_before_fork`` (position ``before`` for ``/fork``, ``at`` for
``/clone``), ``session_before_compact``, ``session_compact``, ``session_shutdown`` (reason
``quit`` | ``reload`` | ``new`` | ``resume`` | ``fork``), ``session_before_tree`` and
``session_tree``. There is no ``session_switch`` or ``session_fork`` after-event.

The controller epoch (``taskGeneration``) changes on navigation, never on ordinary leaf
advancement. The before-events are used: they may cancel conservatively even when the
navigation is later declined (another extension cancels it); restarting is then the parent's
explicit new ``run``. ``session_tree`` adds nothing after ``session_before_tree`` (the navigation
already cancelled every queued and running attempt), so it is not forwarded.
"""

from __future__ import annotations

from typing import Final

SESSION_SHUTDOWN: Final = "session_shutdown"

NAVIGATION_EVENTS: Final = ("session_before_switch", "session_before_fork", "session_before_tree")
"""What the shim forwards as ``navigation`` requests (``session_shutdown`` is the lifecycle's)."""

NOT_NAVIGATION: Final = ("session_start", "session_info_changed", "session_compact", "session_tree")
"""Known and deliberately not navigation. Compaction summarises earlier context into an entry
on the same branch: the task, its requirements and the branch stay, so it is leaf advancement.
A renamed session is the same task. ``session_start`` follows a ``session_shutdown`` that was
already navigation. ``session_tree`` follows ``session_before_tree`` (above)."""

_SWITCH = {
    "new": "a new session was requested (session_before_switch, reason new)",
    "resume": "a switch to another session was requested (session_before_switch, reason resume)",
}
_FORK = {
    "before": "a fork was requested (session_before_fork, position before)",
    "at": "a clone was requested (session_before_fork, position at)",
}
TREE_REASON: Final = "tree navigation was requested (session_before_tree)"


def navigation_reason(
    event: str, *, reason: str | None = None, position: str | None = None
) -> str | None:
    """Why ``event`` (with Pi's ``reason`` or fork ``position``) starts a new task generation,
    or ``None`` when it is not navigation. Unknown detail values navigate too: the event itself
    says the session is changing, whatever a later Pi calls the cause."""
    if event == "session_before_switch":
        return _SWITCH.get(reason or "", "a session switch was requested (session_before_switch)")
    if event == "session_before_fork":
        return _FORK.get(position or "", "a fork was requested (session_before_fork)")
    if event == "session_before_tree":
        return TREE_REASON
    if event == SESSION_SHUTDOWN:
        return shutdown_reason(reason)
    return None


_SHUTDOWN_REASONS: Final = ("quit", "reload", "new", "resume", "fork")


def shutdown_reason(reason: str | None) -> str:
    """``session_shutdown`` is navigation for every reason, conservatively. For ``new``,
    ``resume`` and ``fork`` the parent context is replaced. For ``quit`` and ``reload`` the
    task may continue (``pi -c``), but the main bridge's delegation session (``default``) is
    not bound to a Pi session file: the next Pi session, continued or not, would see this one's
    ready results as its own. And the bridge, which runs the workers, ends with the session.
    Only Pi's own reason names are quoted; anything else (or none: an older shim) is generic."""
    if reason not in _SHUTDOWN_REASONS:
        return "the main Pi session ended (session_shutdown)"
    return f"the main Pi session ended (session_shutdown, reason {reason})"

"""Why a parent stops a child it watches, and when: the limits every face's children run under.

A child is stopped at its deadline, or sooner when its model's provider reported an error and
the child then stayed silent through a grace (Pi working past the error ends the grace), or
when its output crossed a ceiling, or when its owner stopped it (a flow budget).
"""

from __future__ import annotations

import enum


class Stop(enum.Enum):
    TIMEOUT = "timeout"
    PROVIDER_ERROR = "provider-error"
    # The owner's own bound stopped the child at a completed response (a flow or contract
    # budget).
    BUDGET = "budget"
    # One assistant message grew past the output ceiling; the child was killed at once.
    OUTPUT = "output"


def next_stop(deadline: float, error_at: float | None, grace: float) -> tuple[float, Stop]:
    """The earliest moment the child is stopped and why: its timeout ``deadline``, or the end
    of the grace after a pending provider error (``error_at``; the earlier wins, a tie is the
    provider error, the more precise reason)."""
    if error_at is not None and error_at + grace <= deadline:
        return error_at + grace, Stop.PROVIDER_ERROR
    return deadline, Stop.TIMEOUT

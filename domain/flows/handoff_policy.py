"""``handoffPolicy`` and ``modeHandoffPolicy``: the three policies, their order, and how a
call's policy and its mode's minimum resolve to the effective one (the stricter: a call can
never lower a mode's minimum). What each policy does is ``domain.flows.handoff``'s."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs


class HandoffPolicy(enum.StrEnum):
    WARN = "warn"
    QUARANTINE = "quarantine"
    FAIL = "fail"

    @property
    def rank(self) -> int:
        return list(HandoffPolicy).index(self)


DEFAULT_POLICY = HandoffPolicy.WARN


def stricter(first: HandoffPolicy, second: HandoffPolicy | None) -> HandoffPolicy:
    return first if second is None or first.rank >= second.rank else second


@attrs.frozen
class ResolvedPolicy:
    """The call's policy, its mode's minimum (``None``: the call names none) and the effective
    one, the stricter of the two."""

    call: HandoffPolicy
    mode_minimum: HandoffPolicy | None
    effective: HandoffPolicy


def resolve_policy(
    call: HandoffPolicy, mode_minimums: Mapping[str, HandoffPolicy], mode: str
) -> ResolvedPolicy:
    minimum = mode_minimums.get(mode)
    return ResolvedPolicy(call, minimum, stricter(call, minimum))


def stricter_minimums(
    first: Mapping[str, HandoffPolicy], second: Mapping[str, HandoffPolicy]
) -> dict[str, HandoffPolicy]:
    """Two ``modeHandoffPolicy`` maps merged mode by mode, the stricter winning (a preset's
    minimums and its caller's)."""
    return {
        mode: stricter(first.get(mode, DEFAULT_POLICY), second.get(mode))
        for mode in sorted({*first, *second})
    }

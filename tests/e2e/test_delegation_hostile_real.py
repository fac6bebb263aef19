"""Hostile delegated workers on real Pi 0.80.10 and the scripted model's ``worker`` policy
(issue 30; docs/delegation.md, "Workers on real Pi"): the request limit and the output ceiling
hold against the workers that once broke them. Skipped without the project runtime."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.delegation_world import Delegation, delegation_world  # noqa: F401 - the fixture

pytestmark = pytest.mark.realpi

# From its start to its settlement (the receipt's ``timing.elapsedMs``) the worker is killed
# within Pi's start, its turns and the kill grace (SIGTERM, then SIGKILL after 3 s): half the
# 120 s deadline the job is given. Most of it is Pi's own: it parses a streamed tool call's
# arguments piece by piece before it emits the first update (about 5 s for 200 KB on an idle
# machine, 45 s on a loaded one), which no reader of its stream can cut short.
STOP_BOUND_MS = 60_000


def stopped_in_time(delegation: Delegation, behaviour: str, **limits: int) -> dict[str, Any]:
    """The receipt of one ``behaviour`` job run to its end, checked to have ended inside the
    bound, ``hostStatus`` what the stop makes it."""
    receipt: dict[str, Any] = delegation.run_to_end(behaviour, **limits)["receipt"]
    assert receipt["timing"]["elapsedMs"] < STOP_BOUND_MS, receipt["timing"]
    return receipt


def test_a_bash_only_worker_is_stopped_at_max_requests_and_every_request_counted(
    delegation: Delegation,
) -> None:
    receipt = stopped_in_time(delegation, "bash-only", maxRequests=2)
    assert (receipt["hostStatus"], receipt["problem"]) == (
        "failed",
        "the model-request limit is reached",
    )
    assert receipt["observations"]["failure"]["kind"] == "request_limit"
    # Every request that may have reached the provider is on the receipt: the two admitted and
    # the refused third (Pi may send it before the kill lands; it never gets to a fourth).
    assert receipt["usage"]["requests"] == 3
    assert 2 <= len(delegation.model.exchanges()) <= 3
    assert all(not o["allowed"] for o in receipt["observations"]["toolOutcomes"])


def test_a_200_kb_tool_argument_is_stopped_at_the_ceiling_within_a_bound(
    delegation: Delegation,
) -> None:
    receipt = stopped_in_time(delegation, "huge-argument", maxOutputBytes=4096)
    assert (receipt["hostStatus"], receipt["responseLimits"]["overflow"]) == ("invalid", True)
    # Measured as the argument grew (16-byte pieces): stopped at the piece that crossed.
    received = receipt["responseLimits"]["rawBytesReceived"]
    assert 4096 < received < 4096 + 1024
    assert receipt["observations"]["toolOutcomes"] == []  # the call never ran

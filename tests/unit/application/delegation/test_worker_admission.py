"""Every model request of a delegated worker admitted before it is sent
(application/child/worker.py, ``WorkerRole.provider_request``; docs/delegation.md, "Every
request admitted before it leaves"): the first goes on the runtime's admission, each message's
follow-up on the debit its ``message_end`` made, any other request is debited there and then,
and a refusal stops every later request. The shim stops the worker on ``False`` or on any
failure of the bridge."""

from __future__ import annotations

from typing import Any

import pytest

from application.child.worker import REQUEST_LIMIT_REASON, WorkerRole
from application.delegation.broker import EvidenceBroker
from application.ports import RequestAdmission
from tests.fakes.delegation import DelegationWorld
from tests.unit.application.delegation.support import first_lease, run_request, world


def assistant(*call_ids: str) -> dict[str, Any]:
    """A finalised assistant message calling ``bash`` once per id (Pi offers no ``bash``)."""
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": cid, "name": "bash"} for cid in call_ids],
    }


class Started:
    """A worker's role over the host's store, its first request admitted by the runtime (as
    ``WorkerAttempt.run`` does before the prompt)."""

    def __init__(self, w: DelegationWorld, max_requests: int) -> None:
        self.world = w
        self.host = w.host()
        request = run_request()
        request["limits"]["maxRequests"] = max_requests
        self.lease = first_lease(w, self.host.handle(request))
        assert self.host.authorize_request(self.lease)
        self.role = WorkerRole(EvidenceBroker(w.store, self.lease, w.clock))

    def consumed(self) -> int:
        """The requests debited with the host for this attempt."""
        state = self.world.store.snapshot("s1")
        assert state is not None
        return state.attempts()[0][2].consumed


def test_the_role_registers_the_admission_hook() -> None:
    role = Started(world(), max_requests=4).role
    assert role.registrations().provider_request is True
    assert isinstance(role, RequestAdmission)


def test_the_first_request_goes_on_the_runtimes_admission_without_a_second_debit() -> None:
    started = Started(world(), max_requests=4)
    assert started.role.provider_request() is True
    assert started.consumed() == 1


def test_a_follow_up_goes_on_the_debit_its_message_made() -> None:
    started = Started(world(), max_requests=4)
    assert started.role.provider_request() is True
    started.role.message_end(assistant("c1", "c2"))
    # The guard of the same message's calls finds the debit made: no second one.
    started.role.tool_call("c1", "read_source", {})
    assert started.consumed() == 2
    assert started.role.provider_request() is True
    assert started.consumed() == 2


def test_a_request_without_a_credit_is_debited_before_it_leaves() -> None:
    # A retry or compaction Pi sends on its own follows no message with tool calls.
    started = Started(world(), max_requests=4)
    assert started.role.provider_request() is True
    assert started.role.provider_request() is True
    assert started.consumed() == 2


def test_a_request_past_the_reservation_is_refused_and_so_is_every_later_one() -> None:
    started = Started(world(), max_requests=2)
    assert started.role.provider_request() is True
    assert started.role.provider_request() is True  # the second, debited now
    assert started.role.provider_request() is False
    assert started.role.provider_request() is False
    assert started.consumed() == 2


def test_a_follow_up_whose_debit_was_refused_is_stopped_without_debiting_again() -> None:
    # A bash-only worker with maxRequests 2: the second message's follow-up is refused at its
    # end, its calls blocked, and the request it announces never leaves.
    started = Started(world(), max_requests=2)
    role = started.role
    assert role.provider_request() is True
    role.message_end(assistant("c1"))
    assert role.provider_request() is True
    role.message_end(assistant("c2"))
    decision = role.tool_call("c2", "read_source", {})
    assert (decision.block, decision.reason) == (True, REQUEST_LIMIT_REASON)
    assert role.provider_request() is False
    assert started.consumed() == 2


def test_a_revoked_lease_refuses_the_next_uncredited_request() -> None:
    started = Started(world(), max_requests=4)
    assert started.role.provider_request() is True
    started.host.handle({"version": 1, "op": "cancel", "batchId": started.lease.batch_id})
    assert started.role.provider_request() is False


class BrokenBroker:
    """A broker whose store cannot be reached."""

    def admit_request(self) -> bool:
        raise OSError("the session store is gone")


def test_a_broker_failure_is_raised_for_the_shim_to_stop_the_worker() -> None:
    role = WorkerRole(BrokenBroker())  # type: ignore[arg-type]
    assert role.provider_request() is True  # the runtime's credit: no broker call
    with pytest.raises(OSError, match="store is gone"):
        role.provider_request()

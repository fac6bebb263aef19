"""The ``provider_request`` bridge method over real pipes (docs/bridge.md): a delegated worker's
bridge lists it at ``hello`` and answers each request's admission; a broker failure is an
``ok:false`` answer and a role that admits nothing refuses the method, both of which the shim
treats as a refusal (it stops the worker before the request leaves)."""

from __future__ import annotations

from typing import Any

from adapters.bridge import BridgeRole
from application.child.role import InertRole
from application.child.worker import WorkerRole
from tests.integration.bridge_server.support import Served
from tests.unit.application.delegation.support import world
from tests.unit.application.delegation.test_worker_admission import BrokenBroker, Started


def worker_bridge(max_requests: int) -> Served:
    """A worker's bridge over the host's store, its first request admitted by the runtime."""
    role = Started(world(), max_requests).role
    return Served(BridgeRole(name="child-worker", events=role, lifecycle=False))


def error_of(served: Served, method: str) -> dict[str, Any]:
    request_id = served.request(method, {})
    answer = served.next()
    assert (answer["id"], answer["ok"]) == (request_id, False)
    error: dict[str, Any] = answer["error"]
    return error


def test_a_worker_bridge_admits_each_request_until_the_reservation_is_spent() -> None:
    served = worker_bridge(max_requests=2)
    assert served.result("hello")["registrations"]["providerRequest"] is True
    # The runtime's first request, one debited now, then the refusal that stops the worker.
    answers = [served.result("provider_request") for _ in range(3)]
    assert answers == [{"admit": True}, {"admit": True}, {"admit": False}]
    assert served.finish() == 0


def test_a_broker_failure_is_an_error_answer() -> None:
    role = WorkerRole(BrokenBroker())  # type: ignore[arg-type]
    served = Served(BridgeRole(name="child-worker", events=role, lifecycle=False))
    assert served.result("provider_request") == {"admit": True}  # the runtime's credit
    assert error_of(served, "provider_request")["code"] == "internal"
    assert served.finish() == 0


def test_a_role_that_admits_no_requests_refuses_the_method() -> None:
    served = Served(BridgeRole(name="child-legacy", events=InertRole(), lifecycle=False))
    assert "providerRequest" not in served.result("hello")["registrations"]
    error = error_of(served, "provider_request")
    assert error["code"] == "unknown_method"
    assert "admits no model requests" in error["message"]
    assert served.finish() == 0

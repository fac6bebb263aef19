"""The delegation session through the main bridge, as the shim sees it (docs/delegation.md, "In
Pi"): ``/delegate`` and the entry renderer registered, the tool's JSON with its entry, the row
redrawn by the role's own poll as jobs go queued → running → settled, one notice per settled
job, and ``/delegate status|collect`` answered. The host is the fakes' (no Pi, no worker)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.bridge import main_bridge_role
from domain.delegation.policy import SessionGrant
from tests.fakes.delegation import DelegationWorld, outcome, report
from tests.integration.bridge_server.support import TIMEOUT, Served
from tests.integration.test_delegate_tool import build
from tests.unit.application.delegation.support import job, run_request, world

POLL_SECONDS = 0.05
Message = dict[str, Any]


class Shim:
    """The shim's side of the pipe: requests answered, and every event seen on the way."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.events: list[Message] = []

    def call(self, method: str, params: Message | None = None) -> Any:
        request_id = self.served.request(method, params)
        while True:
            message = self.served.next()
            if message.get("id") == request_id:
                assert message["ok"] is True, message
                return message["result"]
            self.events.append(message)

    def ui(self, method: str) -> list[Message]:
        return [
            e["data"] for e in self.events if e["event"] == "ui" and e["data"]["method"] == method
        ]

    def wait_for(self, seen: Callable[[], bool]) -> None:
        """Read events until ``seen()`` holds (the role's poll draws on its own thread)."""
        end = time.monotonic() + TIMEOUT
        while not seen():
            assert time.monotonic() < end, self.events
            self.events.append(self.served.next())


@pytest.fixture
def delegation() -> DelegationWorld:
    return world(session=SessionGrant(max_active_jobs=1))


@pytest.fixture
def shim(tmp_path: Path, delegation: DelegationWorld) -> Iterator[Shim]:
    served = Served(main_bridge_role(build(tmp_path, delegation, POLL_SECONDS)))
    yield Shim(served)
    served.finish()


def test_the_main_bridge_registers_the_command_and_the_entry_renderer(shim: Shim) -> None:
    registrations = shim.call("hello")["registrations"]
    assert "delegate" in [command["name"] for command in registrations["commands"]]
    assert "pi-squad-delegate" in registrations["entryRenderers"]
    shim.call("session_shutdown")


def test_jobs_going_queued_running_settled_redraw_the_row_and_notify_once_each(
    shim: Shim, delegation: DelegationWorld
) -> None:
    shim.call("hello")
    shim.call("session_start", {"hasUI": True})
    request = {
        "toolCallId": "t1",
        "toolName": "delegate",
        "params": run_request(job("k1"), job("k2")),
    }
    result = shim.call("execute_tool", request)
    ran = json.loads(result["texts"][0])
    assert ran["op"] == "run"
    assert result["details"]["entry"]["customType"] == "pi-squad-delegate"
    k1, k2 = (row["jobId"] for row in ran["jobs"])

    def statuses() -> list[str | None]:
        return [s["text"] for s in shim.ui("setStatus")]

    shim.wait_for(lambda: "delegate: 1 queued · 1 running" in statuses())

    worker_side = delegation.host()  # a worker reports from its own thread in the bridge
    worker_side.report(delegation.runtime.lease(k1), outcome(report()))
    shim.wait_for(lambda: "delegate: 1 running · 1 ready" in statuses())
    worker_side.report(delegation.runtime.lease(k2), outcome(report()))
    both_ready = [
        "✓ k1 (investigate) ready · 1/1 covered",
        "✓ k2 (investigate) ready · 1/1 covered",
    ]
    shim.wait_for(lambda: [w["lines"] for w in shim.ui("setWidget")][-1] == both_ready)
    assert statuses()[-1] == "delegate: 2 ready"

    notices = [n["text"] for n in shim.ui("notify")]
    assert [n.split(" ")[2:4] for n in notices] == [["k1", f"({k1})"], ["k2", f"({k2})"]]
    assert all("— next: /delegate collect" in n for n in notices)

    status = shim.call("command", {"name": "delegate", "args": "status"})
    assert status["message"]["content"].splitlines()[2:] == [
        "  ✓ k1 (investigate) ready · 1/1 covered · 0 requests",
        "  ✓ k2 (investigate) ready · 1/1 covered · 0 requests",
    ]
    collected = shim.call("command", {"name": "delegate", "args": "collect"})
    assert collected["message"]["content"].startswith(
        f"delegate collect — batch {ran['batchId']}: 2 results"
    )
    time.sleep(5 * POLL_SECONDS)  # more polls: nothing new to announce
    shim.call("session_shutdown")
    assert len(shim.ui("notify")) == 2

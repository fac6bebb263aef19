"""The in-process half of bench (2): a full read through ``tests.fakes.pi_harness.FakePiChild``
driving ``SpecChildRole`` directly (one message per chunk), with the role's own time per hook,
then the guard's decision for a ``bash`` call after completion; and the check that a task is
attested after its full read."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import Any

from application.ports import PiEvents, Registrations, ToolDecision, ToolResult
from application.spec_reads import AttestationStatus
from bench.common import Json, ms_since
from bench.workspace import Adapters, spec_role

_ns = time.perf_counter_ns


class TimedRole:
    """``PiEvents`` around another, recording each hook's own time (ms)."""

    def __init__(self, inner: PiEvents) -> None:
        self.inner = inner
        self.times: dict[str, list[float]] = {
            "execute_tool": [],
            "message_end": [],
            "context": [],
            "tool_call": [],
        }

    def registrations(self) -> Registrations:
        return self.inner.registrations()

    def session_start(self) -> None:
        self.inner.session_start()

    def before_agent_start(self) -> str | None:
        return self.inner.before_agent_start()

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        with self._timed("tool_call"):
            return self.inner.tool_call(tool_call_id, tool_name, tool_input)

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult:
        with self._timed("execute_tool"):
            return self.inner.execute_tool(tool_call_id, tool_name, params)

    def message_end(self, message: Mapping[str, Any]) -> None:
        with self._timed("message_end"):
            self.inner.message_end(message)

    def context(self) -> None:
        with self._timed("context"):
            self.inner.context()

    @contextlib.contextmanager
    def _timed(self, hook: str) -> Iterator[None]:
        """Records the time of the block under ``hook``, even when the inner hook raises."""
        begin = _ns()
        try:
            yield
        finally:
            self.times[hook].append(ms_since(begin))


def harness_run(adapters: Adapters, published: Any, task_id: str, guard_calls: int) -> Json:
    from tests.fakes.pi_harness import FakePiChild, read

    timed = TimedRole(spec_role(adapters, published, task_id))
    child = FakePiChild(lambda: timed)
    count = published.squad.spec.chunk_count
    total_begin = _ns()
    for index in range(count):
        child.assistant_message([read(index, f"{task_id}-h-{index}")])
    total = ms_since(total_begin)
    reads = timed.times["execute_tool"][:]
    # Each one-read message ends with Pi's ``context`` event, which commits that delivery.
    commits = timed.times["context"][:]
    timed.times["tool_call"].clear()
    for position in range(guard_calls):
        decision = timed.tool_call(f"g{position}", "bash", {"command": "true"})
        if decision.block:
            raise RuntimeError(f"the guard is still closed after a full read: {decision}")
    return {"reads": reads, "commits": commits, "total": total, "guard": timed.times["tool_call"]}


def check_attested(adapters: Adapters, published: Any, task_id: str) -> None:
    verdict = spec_role(adapters, published, task_id).ledger.audit()
    if verdict.status is not AttestationStatus.VALID:
        raise RuntimeError(f"task {task_id} is not attested after its full read: {verdict}")

"""``workflow`` over a scripted dispatch, a recording gate, the in-memory file system and the
fake clock: phases in order with their inputs, the bounds, the gates, the state file written
after every phase and read back by ``resume`` (also after a kill), and the refusals."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, parse_call
from domain.flows.errors import FlowError
from domain.flows.handoff import HandoffGuard
from domain.flows.mode_parts import CheckOutcome, FlowOutcome, FlowStatus, ModeInputs
from domain.flows.runs import ChildJob, RunResult
from domain.flows.strategies import STRATEGIES
from domain.flows.workflow_fields import default_state_file, workflow_digest
from tests.fakes.clock import FakeClock
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.flows import FakeCheckRun, handed
from tests.fakes.workflow import PROJECT, Person, host
from tests.unit.domain.flows.test_judging import WHY, ScriptedDispatch, failed

STATE = "state.json"
STATE_PATH = f"{PROJECT}/{STATE}"


class Killed(BaseException):
    """The driving process dies while a child runs (nothing after it executes)."""


@attrs.define
class KilledAt(ScriptedDispatch):
    """Dies when the job ``at`` is dispatched."""

    at: str = ""

    def __call__(self, jobs: Sequence[ChildJob]) -> tuple[RunResult, ...]:
        if any(job.key == self.at for job in jobs):
            raise Killed
        return super().__call__(jobs)


@attrs.define
class World:
    fs: InMemoryFileSystem = attrs.field(factory=InMemoryFileSystem)
    clock: FakeClock = attrs.field(factory=FakeClock)
    check: FakeCheckRun = attrs.field(factory=FakeCheckRun)

    def run(
        self,
        document: dict[str, Any],
        dispatch: ScriptedDispatch,
        person: Person | None = None,
    ) -> FlowOutcome:
        call: FlowCall = parse_call({**document, "why": WHY})
        inputs = ModeInputs(
            check=self.check, cwd=PROJECT, workflow=host(self.fs, self.clock, person)
        )
        return STRATEGIES[call.mode](call, dispatch, HandoffGuard.for_call(call), inputs)

    def state(self, path: str = STATE_PATH) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.fs.read(path))
        return loaded

    def put_state(self, document: dict[str, Any]) -> None:
        self.fs.add_file(STATE_PATH, json.dumps(document).encode())


def workflow(*phases: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "task": "Ship the parser fix.",
        "workflow": {"phases": list(phases), "stateFile": STATE, **fields},
    }


def work(phase_id: str, task: str = "do {task}", **fields: Any) -> dict[str, Any]:
    return {"id": phase_id, "agent": "recon", "task": task, **fields}


def approval(phase_id: str, message: str = "Deploy?") -> dict[str, Any]:
    return {"id": phase_id, "approval": {"message": message}}


def resumed(document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "workflow": {**document["workflow"], "resume": True}}


def code_of(outcome: FlowOutcome) -> ErrorCode | None:
    return outcome.results[-1].error_code


def refusal(document: dict[str, Any]) -> FlowError:
    with pytest.raises(FlowError) as caught:
        parse_call({**document, "why": WHY})
    return caught.value


# -- order and inputs -------------------------------------------------------------------------


def test_phases_run_in_order_each_given_the_previous_and_named_phases_as_envelopes() -> None:
    world = World()
    dispatch = ScriptedDispatch({"phase-plan": "PLAN-TEXT", "phase-build": "BUILD-TEXT"})
    document = workflow(
        work("plan"),
        work("build", "build after {previous}"),
        work("review", "compare {phase.plan} with {previous}"),
    )
    outcome = world.run(document, dispatch)
    assert outcome.status is FlowStatus.COMPLETED
    assert dispatch.keys == ["phase-plan", "phase-build", "phase-review"]
    review = handed(dispatch.told("phase-review"))
    assert review["output of phase-plan (recon)"]["data"]["text"] == "PLAN-TEXT"
    assert review["output of phase-build (recon)"]["data"]["text"] == "BUILD-TEXT"
    assert "do Ship the parser fix." in dispatch.told("phase-plan")
    state = world.state()
    assert [state["phases"][p]["status"] for p in ("plan", "build", "review")] == ["completed"] * 3
    assert state["completedAt"] is not None
    assert state["phases"]["plan"]["attestation"]["validation"] == "legacy-compatibility"


def test_the_state_is_written_after_every_phase_atomically_owner_only() -> None:
    world = World()
    world.run(workflow(work("a"), work("b")), ScriptedDispatch({}))
    writes = world.fs.calls_of("write_atomic")
    # The start, each of the two phases, and the completion.
    assert len(writes) == 4
    assert world.fs.mode(STATE_PATH) == 0o600


def test_the_default_state_file_is_named_by_the_workflow_digest_in_the_calls_directory() -> None:
    world = World()
    document = workflow(work("a"))
    del document["workflow"]["stateFile"]
    world.run(document, ScriptedDispatch({}))
    call = parse_call({**document, "why": WHY})
    assert call.workflow is not None
    path = default_state_file(workflow_digest("Ship the parser fix.", call.workflow))
    assert path.startswith(".pi/flow-workflows/")
    assert world.state(f"{PROJECT}/{path}")["phases"]["a"]["status"] == "completed"
    assert world.fs.mode(f"{PROJECT}/.pi/flow-workflows") == 0o700


def test_a_debrief_synthesises_every_work_phase() -> None:
    world = World()
    dispatch = ScriptedDispatch({"phase-a": "ALPHA", "phase-b": "BETA", "debrief": "final"})
    document = workflow(work("a"), work("b"), debrief={"agent": "recon"})
    outcome = world.run(document, dispatch)
    assert dispatch.keys == ["phase-a", "phase-b", "debrief"]
    assert set(handed(dispatch.told("debrief"))) == {
        "output of phase-a (recon)",
        "output of phase-b (recon)",
    }
    assert outcome.results[-1].output == "final"


# -- bounds -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "phases",
    [
        [],
        [work(f"p{i}") for i in range(13)],
        [{"id": "a", "agent": "recon", "task": "t", "approval": {"message": "m"}}],
        [{"id": "a", "agent": "recon"}],
        [{"id": "a"}],
        [work("a"), work("a")],
        [work("a", "use {phase.b}"), work("b")],
        [approval("gate"), work("b", "use {phase.gate}")],
        [{"id": "a", "approval": {"message": "m"}, "checkCommand": "true"}],
        [{"id": "bad id", "agent": "recon", "task": "t"}],
    ],
)
def test_a_malformed_workflow_is_refused_before_any_spawn(phases: list[dict[str, Any]]) -> None:
    assert refusal(workflow(*phases)).code is ErrorCode.WORKFLOW_INVALID


@pytest.mark.parametrize(
    ("field", "value"),
    [("approvalTtlMs", 59_999), ("approvalTtlMs", 2_592_000_001), ("stateFile", "state.sh")],
)
def test_workflow_fields_out_of_bounds_are_workflow_invalid(field: str, value: object) -> None:
    assert refusal(workflow(work("a"), **{field: value})).code is ErrorCode.WORKFLOW_INVALID


def test_twelve_phases_are_accepted() -> None:
    world = World()
    outcome = world.run(workflow(*(work(f"p{i}") for i in range(12))), ScriptedDispatch({}))
    assert len(outcome.results) == 12


# -- gates and failures -----------------------------------------------------------------------


def test_a_failing_gate_stops_the_workflow_and_resume_runs_that_phase_again() -> None:
    world = World(check=FakeCheckRun([CheckOutcome(2, "3 tests failed")]))
    document = workflow(work("build", checkCommand="make test", cwd="sub"), work("ship"))
    dispatch = ScriptedDispatch({})
    outcome = world.run(document, dispatch)
    assert outcome.status is FlowStatus.FAILED
    assert code_of(outcome) is ErrorCode.WORKFLOW_GATE_FAILED
    assert outcome.results[-1].output == "3 tests failed"
    assert dispatch.keys == ["phase-build"]
    assert world.check.calls == [("make test", f"{PROJECT}/sub", 300_000)]
    assert world.state()["phases"]["build"]["status"] == "failed"
    world.check.outcomes = [CheckOutcome(0)]
    again = ScriptedDispatch({})
    assert world.run(resumed(document), again).status is FlowStatus.COMPLETED
    assert again.keys == ["phase-build", "phase-ship"]


def test_a_failed_phase_stops_the_rest_and_resume_keeps_the_completed_ones() -> None:
    world = World()
    document = workflow(work("a"), work("b"), work("c"))
    first = ScriptedDispatch({"phase-b": failed})
    outcome = world.run(document, first)
    assert code_of(outcome) is ErrorCode.CHILD_EXIT_NONZERO
    assert first.keys == ["phase-a", "phase-b"]
    second = ScriptedDispatch({})
    outcome = world.run(resumed(document), second)
    assert outcome.status is FlowStatus.COMPLETED
    assert second.keys == ["phase-b", "phase-c"]
    # The resumed phase b still sees phase a's recorded envelope.
    assert "output of phase-a (recon)" in handed(second.told("phase-b"))


def test_resume_after_a_kill_continues_from_the_last_completed_phase() -> None:
    world = World()
    document = workflow(work("a"), work("b"), work("c"))
    with pytest.raises(Killed):
        world.run(document, KilledAt({"phase-a": "A-OUT"}, at="phase-b"))
    assert world.state()["phases"] == {"a": world.state()["phases"]["a"]}
    second = ScriptedDispatch({})
    assert world.run(resumed(document), second).status is FlowStatus.COMPLETED
    assert second.keys == ["phase-b", "phase-c"]
    assert handed(second.told("phase-b"))["output of phase-a (recon)"]["data"]["text"] == "A-OUT"


def test_resuming_a_completed_workflow_is_an_audit_only_no_op() -> None:
    world = World()
    document = workflow(work("a"), work("b"))
    world.run(document, ScriptedDispatch({"phase-a": "kept"}))
    before = world.fs.read(STATE_PATH)
    writes = len(world.fs.calls_of("write_atomic"))
    dispatch = ScriptedDispatch({})
    outcome = world.run(resumed(document), dispatch)
    assert outcome.status is FlowStatus.COMPLETED
    assert dispatch.keys == []
    assert "audit only" in outcome.summary
    assert outcome.results[0].output == "kept"
    assert world.fs.read(STATE_PATH) == before
    assert len(world.fs.calls_of("write_atomic")) == writes


# -- the state file ---------------------------------------------------------------------------


def test_a_state_file_found_without_resume_is_refused_never_overwritten() -> None:
    world = World()
    document = workflow(work("a"))
    world.run(document, ScriptedDispatch({}))
    before = world.fs.read(STATE_PATH)
    outcome = world.run(document, ScriptedDispatch({}))
    assert code_of(outcome) is ErrorCode.WORKFLOW_STATE_INVALID
    assert "resume" in (outcome.results[-1].error or "")
    assert world.fs.read(STATE_PATH) == before


def test_a_state_of_another_workflow_is_refused() -> None:
    world = World()
    world.run(workflow(work("a")), ScriptedDispatch({}))
    changed = resumed(workflow(work("a", "something else")))
    outcome = world.run(changed, ScriptedDispatch({}))
    assert code_of(outcome) is ErrorCode.WORKFLOW_STATE_INVALID
    assert "another workflow" in (outcome.results[-1].error or "")


@pytest.mark.parametrize("data", [b"{not json", b'{"schemaVersion": 9}', b"[]"])
def test_a_malformed_state_file_is_workflow_state_invalid(data: bytes) -> None:
    world = World()
    world.fs.add_file(STATE_PATH, data)
    dispatch = ScriptedDispatch({})
    outcome = world.run(resumed(workflow(work("a"))), dispatch)
    assert code_of(outcome) is ErrorCode.WORKFLOW_STATE_INVALID
    assert dispatch.keys == []


def test_a_host_without_a_state_store_refuses() -> None:
    call = parse_call({**workflow(work("a")), "why": WHY})
    dispatch = ScriptedDispatch({})
    outcome = STRATEGIES[call.mode](call, dispatch, HandoffGuard.for_call(call), ModeInputs())
    assert code_of(outcome) is ErrorCode.WORKFLOW_STATE_INVALID
    assert dispatch.keys == []


def test_only_a_phase_another_role_reads_is_dispatched_as_consumed() -> None:
    dispatch = ScriptedDispatch({})
    World().run(workflow(work("a"), work("b"), approval("go")), dispatch)
    assert [job.consumed for job in dispatch.jobs] == [True, False]
    debriefed = ScriptedDispatch({})
    World().run(workflow(work("a"), debrief={"agent": "recon"}), debriefed)
    assert [job.consumed for job in debriefed.jobs] == [True, False]

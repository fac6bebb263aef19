"""``checkpoint`` and ``reflexion`` around any spawning mode, on the fake runtime: who is asked
and when, what a headless run and a declined answer refuse, the answers in the trace; the
lessons given to the top-level task, the one lesson a run appends, and the file's rules."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.errors import FlowError
from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import FakeAgentDirectory, agent
from tests.fakes.tracing import FakeTraceSinks
from tests.unit.application.flows.engine import SINGLE, WHY, Engine

LESSONS = ".pi/flow-reflections.jsonl"


class Person:
    """Answers every question with ``answer``, noting what was asked and how many children
    had spawned by then."""

    def __init__(self, engine: Engine, answer: bool) -> None:
        self.engine = engine
        self.answer = answer
        self.asked: list[tuple[str, str, int]] = []

    def __call__(self, title: str, message: str) -> bool:
        self.asked.append((title, message, len(self.engine.scripted.runtime.spawned)))
        return self.answer


def checkpoint_events(sinks: FakeTraceSinks) -> list[Any]:
    return [e for e in sinks.last.by_role("event") if e.name.startswith("checkpoint.")]


# -- checkpoint ---------------------------------------------------------------------------------


@pytest.mark.parametrize("before", ["spawn", "finalize"])
def test_a_checkpoint_nobody_can_answer_is_refused_before_any_spawn(
    tmp_path: Path, before: str
) -> None:
    engine = Engine(tmp_path)
    error = engine.refuse({**SINGLE, "checkpoint": {"before": before}})
    assert error.code is ErrorCode.CHECKPOINT_APPROVAL_REQUIRED
    assert error.path == "$.checkpoint.before"
    assert "nobody to ask" in error.message


def test_a_spawn_checkpoint_asks_before_the_first_child_and_runs_when_approved(
    tmp_path: Path,
) -> None:
    sinks = FakeTraceSinks()
    engine = Engine(tmp_path, trace_sinks=sinks)
    person = Person(engine, answer=True)
    call = {**SINGLE, "checkpoint": {"message": "Costs real money."}, "traceFile": "t.jsonl"}
    report = engine.run(call, confirm=person)
    ((title, message, spawned),) = person.asked
    assert spawned == 0
    assert title == "pi-squad flow: checkpoint"
    assert "Costs real money." in message
    assert "researcher" in message
    assert report.status == "completed"
    assert engine.scripted.order() == ["single"]
    (event,) = checkpoint_events(sinks)
    assert event.name == "checkpoint.granted"
    assert event.attributes["flow.approval.outcome"] == "granted"


def test_a_declined_spawn_checkpoint_refuses_and_spawns_nothing(tmp_path: Path) -> None:
    sinks = FakeTraceSinks()
    engine = Engine(tmp_path, trace_sinks=sinks)
    person = Person(engine, answer=False)
    with pytest.raises(FlowError) as caught:
        engine.run({**SINGLE, "checkpoint": {}, "traceFile": "t.jsonl"}, confirm=person)
    assert caught.value.code is ErrorCode.CHECKPOINT_APPROVAL_DENIED
    assert "nothing was spawned" in caught.value.message
    assert engine.scripted.order() == []
    (event,) = checkpoint_events(sinks)
    assert event.name == "checkpoint.declined"


def test_a_finalize_checkpoint_asks_once_the_children_settled(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    person = Person(engine, answer=True)
    call = {
        "tasks": [{"agent": "researcher", "task": "a"}, {"agent": "researcher", "task": "b"}],
        "tier": "capable",
        "why": WHY,
        "checkpoint": {"before": "finalize"},
    }
    report = engine.run(call, confirm=person)
    ((_title, message, spawned),) = person.asked
    assert spawned == 2
    assert "2/2 runs completed" in message
    assert report.status == "completed"


def test_a_declined_finalize_checkpoint_withholds_the_result(tmp_path: Path) -> None:
    sinks = FakeTraceSinks()
    engine = Engine(tmp_path, trace_sinks=sinks)
    person = Person(engine, answer=False)
    call = {**SINGLE, "checkpoint": {"before": "finalize"}, "traceFile": "t.jsonl"}
    with pytest.raises(FlowError) as caught:
        engine.run(call, confirm=person)
    assert caught.value.code is ErrorCode.CHECKPOINT_APPROVAL_DENIED
    assert "1 child(ren) ran; their results are withheld" in caught.value.message
    assert engine.scripted.order() == ["single"]
    (event,) = checkpoint_events(sinks)
    assert event.name == "checkpoint.declined"
    assert sinks.last.root.attributes["flow.error_code"] == "CHECKPOINT_APPROVAL_DENIED"


def test_project_files_are_approved_before_the_checkpoint_is_asked(tmp_path: Path) -> None:
    engine = Engine(tmp_path, FakeAgentDirectory(project=(agent("theirs"),)))
    order: list[str] = []

    def asked(what: str) -> bool:
        order.append(what)
        return True

    engine.run(
        {**SINGLE, "agent": "theirs", "agentScope": "all", "checkpoint": {}},
        approve=lambda files: asked("files"),
        confirm=lambda title, message: asked("checkpoint"),
    )
    assert order == ["files", "checkpoint"]


@pytest.mark.parametrize("mode", [{"list": True}, {"showConfig": True}])
@pytest.mark.parametrize(
    "field", [{"checkpoint": {}}, {"reflexion": {"enabled": True}}], ids=["checkpoint", "reflexion"]
)
def test_list_and_show_config_refuse_the_wrappers(
    tmp_path: Path, mode: dict[str, Any], field: dict[str, Any]
) -> None:
    error = Engine(tmp_path).refuse({**mode, **field})
    assert error.code is ErrorCode.FLOW_INVALID


@pytest.mark.parametrize(
    "field",
    [
        {"checkpoint": {"before": "later"}},
        {"checkpoint": {"ask": True}},
        {"reflexion": {"enabled": True, "maxEntries": 21}},
        {"reflexion": {"enabled": True, "maxEntries": 0}},
        {"reflexion": {"enabled": True, "file": "lessons.txt"}},
        {"reflexion": {"file": "l.jsonl"}},
    ],
)
def test_malformed_wrappers_are_refused_before_any_spawn(
    tmp_path: Path, field: dict[str, Any]
) -> None:
    assert Engine(tmp_path).refuse({**SINGLE, **field}).code is ErrorCode.FLOW_INVALID


# -- reflexion ----------------------------------------------------------------------------------


def reflexion(**extra: Any) -> dict[str, Any]:
    return {"reflexion": {"enabled": True, **extra}}


def lines(engine: Engine, file: str = LESSONS) -> list[dict[str, Any]]:
    text = (engine.cwd / file).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_a_run_that_spawned_appends_one_lesson_to_an_owner_only_file(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    report = engine.run({**SINGLE, "task": "Map the parser", **reflexion()})
    (record,) = lines(engine)
    assert record["v"] == 1
    assert record["flowId"] == report.flow_id
    assert (record["mode"], record["status"]) == ("single", "completed")
    assert record["lesson"].startswith("single completed: 1/1 runs completed; task: Map the parser")
    assert stat.S_IMODE(os.stat(engine.cwd / LESSONS).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(engine.cwd / ".pi").st_mode) == 0o700
    assert report.document()["reflexion"] == {
        "file": LESSONS,
        "lessonsGiven": 0,
        "lessonRecorded": True,
    }


def test_the_next_run_is_given_the_recent_lessons_in_its_task_only(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    for n in range(4):
        engine.run({**SINGLE, "task": f"round {n}", **reflexion()})
    engine.scripted.runtime.spawned.clear()
    report = engine.run({**SINGLE, "task": "round 4", **reflexion(maxEntries=2)})
    prompt = engine.prompts["single"]
    assert prompt.startswith("round 4")
    assert "task: round 2" in prompt
    assert "task: round 3" in prompt
    assert "task: round 1" not in prompt
    assert "<<<UNTRUSTED DATA" in prompt
    assert report.document()["reflexion"]["lessonsGiven"] == 2
    assert len(lines(engine)) == 5


def test_a_loop_roles_own_task_is_not_given_the_lessons(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    engine.run({**SINGLE, "task": "earlier", **reflexion()})

    def done(child: FakeChild) -> None:
        child.say("LOOP: DONE", tokens=5)
        child.settle()

    engine.scripted.default = done
    call = {
        "task": "the goal",
        "loop": {"body": {"agent": "researcher", "task": "body's own work"}, "maxIterations": 1},
        "why": WHY,
        **reflexion(),
    }
    engine.scripted.runtime.spawned.clear()
    engine.run(call)
    assert "earlier" not in next(iter(engine.prompts.values()))


def test_a_call_without_a_top_level_task_is_given_no_lessons(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    engine.run({**SINGLE, "task": "earlier", **reflexion()})
    engine.scripted.runtime.spawned.clear()
    call = {"tasks": [{"agent": "researcher", "task": "alone"}], "why": WHY, **reflexion()}
    report = engine.run(call)
    assert engine.prompts["task-0"].startswith("alone")
    assert "earlier" not in engine.prompts["task-0"]
    assert report.document()["reflexion"]["lessonsGiven"] == 0
    assert len(lines(engine)) == 2


def test_a_run_that_spawned_nothing_records_no_lesson(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    report = engine.run({**SINGLE, "maxTokens": 0, **reflexion()})
    assert engine.scripted.order() == []
    assert not (engine.cwd / LESSONS).exists()
    assert report.document()["reflexion"]["lessonRecorded"] is False


def test_the_lesson_is_redacted(tmp_path: Path) -> None:
    engine = Engine(tmp_path)

    def leaks(child: FakeChild) -> None:
        child.say("token sk-" + "z" * 30 + " for ana@example.com", tokens=5)
        child.settle()

    engine.scripted.default = leaks
    engine.run({**SINGLE, **reflexion(file="notes/l.jsonl")})
    (record,) = lines(engine, "notes/l.jsonl")
    assert "sk-zzz" not in record["lesson"]
    assert "ana@example.com" not in record["lesson"]
    assert "[REDACTED:api-key]" in record["lesson"]


def test_a_declined_finalize_leaves_a_lesson_without_the_answer(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    with pytest.raises(FlowError):
        engine.run(
            {**SINGLE, "checkpoint": {"before": "finalize"}, **reflexion()},
            confirm=lambda title, message: False,
        )
    (record,) = lines(engine)
    assert record["status"] == "declined"
    assert "final answer" not in record["lesson"]


@pytest.mark.parametrize("file", ["../outside.jsonl", "/tmp/abs.jsonl", "a/../../x.jsonl"])
def test_a_reflections_file_outside_the_cwd_is_refused_before_any_spawn(
    tmp_path: Path, file: str
) -> None:
    error = Engine(tmp_path).refuse({**SINGLE, **reflexion(file=file)})
    assert (error.code, error.path) == (ErrorCode.FLOW_INVALID, "$.reflexion.file")
    assert not (tmp_path / "outside.jsonl").exists()


def test_a_reflections_directory_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (engine.cwd / ".pi").symlink_to(elsewhere)
    error = engine.refuse({**SINGLE, **reflexion()})
    assert (error.code, error.path) == (ErrorCode.FLOW_INVALID, "$.reflexion.file")
    assert "symbolic link" in error.message
    assert list(elsewhere.iterdir()) == []


def test_a_reflections_file_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    target = tmp_path / "target.jsonl"
    target.write_text("")
    (engine.cwd / "l.jsonl").symlink_to(target)
    error = engine.refuse({**SINGLE, **reflexion(file="l.jsonl")})
    assert (error.code, error.path) == (ErrorCode.FLOW_INVALID, "$.reflexion.file")
    assert "symlink" in error.message


def test_a_reflections_file_too_large_to_be_ours_is_refused(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    (engine.cwd / "big.jsonl").write_bytes(b"x" * (1024 * 1024 + 1))
    error = engine.refuse({**SINGLE, **reflexion(file="big.jsonl")})
    assert (error.code, error.path) == (ErrorCode.FLOW_INVALID, "$.reflexion.file")
    assert "too large" in error.message


def test_a_disabled_reflexion_reads_and_writes_nothing(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    report = engine.run({**SINGLE, "reflexion": {"enabled": False}})
    assert not (engine.cwd / ".pi").exists()
    assert "reflexion" not in report.document()

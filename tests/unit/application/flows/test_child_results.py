"""The flow engine on fakes: how child failures, silences and outputs become results
(timeouts, protocol errors, redaction, caps, withheld content, approvals)."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.flows.errors import FlowError
from tests.fakes.flows import FakeAgentDirectory, agent, answer, handed
from tests.fakes.tracing import FakeTraceSinks
from tests.unit.application.flows.engine import SINGLE, WHY, Engine


def test_a_child_past_its_timeout_is_killed_and_reported(engine: Engine) -> None:
    engine.scripted.default = lambda child: None  # never settles
    document = engine.run({**SINGLE, "timeoutMs": 1000}).document()
    (child,) = engine.scripted.runtime.spawned
    assert child.killed
    assert document["results"][0]["error"]["code"] == "CHILD_TIMEOUT"
    assert document["status"] == "failed"


def test_a_child_that_settles_silently_is_a_protocol_error(engine: Engine) -> None:
    engine.scripted.default = lambda child: child.settle()
    document = engine.run(SINGLE).document()
    assert document["results"][0]["error"]["code"] == "CHILD_PROTOCOL_ERROR"


def test_a_child_that_cannot_start_is_a_failed_run(engine: Engine) -> None:
    engine.scripted.runtime.fail_next_spawn = "no pi"
    document = engine.run(SINGLE).document()
    assert document["results"][0]["error"]["code"] == "CHILD_EXIT_NONZERO"
    assert "could not start" in document["results"][0]["error"]["message"]


def test_record_content_false_withholds_outputs_but_still_chains_them(engine: Engine) -> None:
    engine.scripted.scripts["step-1"] = answer("SECRET-FINDING")
    document = engine.run(
        {
            "task": "g",
            "chain": [{"agent": "researcher", "task": "a"}, {"agent": "reviewer", "task": "b"}],
            "why": WHY,
            "recordContent": False,
        }
    ).document()
    assert [r["output"] for r in document["results"]] == [None, None]
    assert "SECRET-FINDING" in engine.prompts["step-2"]


def test_returned_output_is_redacted_unless_the_call_says_otherwise(engine: Engine) -> None:
    secret = "key sk-" + "x" * 30 + " in /home/ada/notes"
    engine.scripted.scripts["single"] = answer(secret)
    document = engine.run(SINGLE, home="/home/ada").document()
    assert document["results"][0]["output"] == "key [REDACTED:api-key] in ~/notes"
    engine.scripted.scripts["single"] = answer(secret)
    document = engine.run({**SINGLE, "redactSecrets": False}, home="/home/ada").document()
    assert document["results"][0]["output"] == secret


def test_outputs_are_capped_for_the_caller_and_the_next_step(engine: Engine) -> None:
    huge = "é" * 40_000  # 80 000 UTF-8 bytes
    engine.scripted.scripts["step-1"] = answer(huge)
    document = engine.run(
        {
            "task": "g",
            "chain": [{"agent": "researcher", "task": "a"}, {"agent": "reviewer", "task": "b"}],
            "why": WHY,
        }
    ).document()
    first = document["results"][0]
    assert first["outputTruncated"] is True
    assert len(first["output"].encode()) == 50 * 1024
    # The envelope still parses: the cut is said at the end of its text; its summary is the
    # first KiB, so what crosses stays within the cap plus 1 KiB.
    envelope = handed(engine.prompts["step-2"])["output of step-1 (researcher)"]
    assert envelope["data"]["text"].endswith("\n[cut: the output was longer than 51200 bytes]")
    assert len(envelope["summary"].encode()) <= 1024 + len("…".encode())
    assert len(engine.prompts["step-2"].encode()) < 52 * 1024


@pytest.mark.parametrize("approved", [True, False])
def test_the_persons_answer_on_project_files_is_an_approval_event(
    tmp_path: Path, approved: bool
) -> None:
    sinks = FakeTraceSinks()
    engine = Engine(tmp_path, FakeAgentDirectory(project=(agent("theirs"),)), trace_sinks=sinks)
    call = {**SINGLE, "agent": "theirs", "agentScope": "all", "traceFile": "t.jsonl"}
    asked: list[object] = []

    def person(files: object) -> bool:
        asked.append(files)
        return approved

    if approved:
        engine.run(call, approve=person)
    else:
        with pytest.raises(FlowError):
            engine.run(call, approve=person)
    assert len(asked) == 1
    outcome = "granted" if approved else "declined"
    (event,) = [
        e for e in sinks.last.by_role("event") if e.attributes["flow.event_kind"] == "approval"
    ]
    assert event.name == f"approval.{outcome}"
    assert event.attributes["flow.approval.outcome"] == outcome
    assert event.attributes["flow.approval.files"] == ("agent:theirs",)
    assert engine.scripted.order() == (["single"] if approved else [])

"""The advisor's setting, what it is told and how its reply becomes one steer (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from domain.errors import PiSquadError
from domain.squad.advisor import (
    MAX_ADVICE_CHARS,
    AdvisorSettings,
    advice_from,
    advisor_from_environment,
    advisor_prompt,
)
from domain.squad.messages import Message, MessageKind
from domain.squad.model import TaskStatus
from tests.builders import task_record

START = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


def test_unset_or_empty_means_no_advisor() -> None:
    assert advisor_from_environment({}) is None
    assert advisor_from_environment({"PI_SQUAD_ADVISOR_MODEL": "  "}) is None


def test_provider_slash_model_sets_both_and_a_model_alone_keeps_the_provider() -> None:
    env = {"PI_SQUAD_ADVISOR_MODEL": "openrouter/anthropic/claude-haiku:low"}
    assert advisor_from_environment(env) == AdvisorSettings(
        model="anthropic/claude-haiku:low", provider="openrouter"
    )
    only = advisor_from_environment({"PI_SQUAD_ADVISOR_MODEL": "haiku"})
    assert only == AdvisorSettings(model="haiku", provider=None)
    assert only is not None
    assert only.name == "haiku"
    timed = advisor_from_environment(
        {"PI_SQUAD_ADVISOR_MODEL": "a/b", "PI_SQUAD_ADVISOR_TIMEOUT_MS": "30000"}
    )
    assert timed is not None
    assert timed.timeout == 30.0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PI_SQUAD_ADVISOR_MODEL", "--api-key=x"),
        ("PI_SQUAD_ADVISOR_MODEL", "a model"),
        ("PI_SQUAD_ADVISOR_MODEL", "/model"),
        ("PI_SQUAD_ADVISOR_MODEL", "provider/"),
        ("PI_SQUAD_ADVISOR_TIMEOUT_MS", "0"),
        ("PI_SQUAD_ADVISOR_TIMEOUT_MS", "1.5"),
    ],
)
def test_a_malformed_setting_is_refused_naming_it(name: str, value: str) -> None:
    env = {"PI_SQUAD_ADVISOR_MODEL": "a/b", name: value}
    with pytest.raises(PiSquadError) as refused:
        advisor_from_environment(env)
    assert refused.value.message.startswith(f"{name} is {value!r}; allowed: ")


def message(seconds: float, sender: str, kind: MessageKind, text: str) -> Message:
    return Message(
        id="m", ts=START + timedelta(seconds=seconds), sender=sender, kind=kind, text=text
    )


def test_the_prompt_holds_facts_and_never_a_messages_text() -> None:
    task = task_record(
        "build",
        title="SPEC TITLE",
        description="SPEC DESCRIPTION",
        agent="backend",
        status=TaskStatus.IN_PROGRESS,
        created=START,
        started=START,
        output="SPEC OUTPUT",
    )
    history = [
        message(0, "squad", MessageKind.STATUS, "Agent backend starting work"),
        message(3, "backend", MessageKind.TOOL, "bash"),
        message(4, "backend", MessageKind.TOOL, "rm -rf / ; SPEC TOOL"),
        message(9, "backend", MessageKind.TEXT, "SPEC QUOTED BY THE CHILD"),
        message(12, "orchestrator", MessageKind.MESSAGE, "SPEC SENT BY THE ORCHESTRATOR"),
        message(20, "squad", MessageKind.SYSTEM, "Agent exited: stderr SPEC TAIL"),
    ]
    prompt = advisor_prompt(task, history, 362.4)
    assert "SPEC" not in prompt
    assert prompt.splitlines()[:4] == [
        "Task id: build",
        "Agent: backend",
        "Status: in_progress",
        "Quiet for: 362 s; it was already steered once and did not move.",
    ]
    assert "- at +3 s: the agent started the tool bash" in prompt
    assert "- at +9 s: a text message (24 characters, not shown)" in prompt
    assert "- at +20 s: a system note of the scheduler" in prompt


def test_the_advice_is_the_first_sentence_on_one_line_and_bounded() -> None:
    assert advice_from("  Run the tests.\nThen report back.  ") == "Run the tests."
    assert advice_from("Check\n the   log!  More.") == "Check the log!"
    assert advice_from(" \n ") is None
    long = advice_from("x" * 1000)
    assert long is not None
    assert len(long) == MAX_ADVICE_CHARS
    assert long.endswith("…")

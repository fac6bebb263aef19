"""Contract §2: the squad call accepts exactly one of two closed forms."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from application.squads.squad_call import FileCall, InlineCall, classify_call, inline_tasks
from domain.agents import AgentCatalog, AgentDefinition, AgentSource, LoadedAgent
from domain.errors import ErrorCode, SpecError

HASH = "ab" * 32
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def refused(call: Any) -> SpecError:
    with pytest.raises(SpecError) as caught:
        classify_call(call)
    return caught.value


def test_file_form_is_accepted_exactly() -> None:
    assert classify_call({"specFile": "spec.json", "specSha256": HASH}) == FileCall(
        "spec.json", HASH
    )


@pytest.mark.parametrize("extra", ["goal", "tasks", "agents", "config"])
def test_file_form_mixed_with_inline_fields_is_rejected(extra: str) -> None:
    error = refused({"specFile": "s.json", "specSha256": HASH, extra: "x"})
    assert error.code is ErrorCode.SPEC_MALFORMED
    assert "cannot be combined" in error.message


@pytest.mark.parametrize("digest", [HASH.upper(), "abc", HASH + "\n"])
def test_file_form_with_a_bad_hash_is_a_hash_mismatch(digest: str) -> None:
    assert (
        refused({"specFile": "s.json", "specSha256": digest}).code is ErrorCode.SPEC_HASH_MISMATCH
    )


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ({"specFile": "s.json"}, "'specSha256'"),
        ({"specSha256": HASH}, "'specFile'"),
        ({"specFile": "", "specSha256": HASH}, "$.specFile: must not be empty"),
        ({"specFile": 3, "specSha256": HASH}, "$.specFile: expected string"),
        ({"specFile": "s", "specSha256": HASH, "extra": 1}, "unknown property"),
    ],
)
def test_incomplete_or_wrong_file_forms_are_malformed(call: dict[str, Any], expected: str) -> None:
    error = refused(call)
    assert error.code is ErrorCode.SPEC_MALFORMED
    assert expected in error.message


def test_inline_form_applies_upstream_config_rules() -> None:
    call = classify_call(
        {"goal": "g", "config": {"maxConcurrency": 5}, "agents": {"qa": {"thinking": "low"}}}
    )
    assert isinstance(call, InlineCall)
    assert call.config.max_concurrency == 5
    assert call.config.auto_unblock is True
    assert call.config.max_retries == 2
    assert call.tasks is None
    assert call.agents[0][0] == "qa"


@pytest.mark.parametrize(
    "call",
    [
        {},
        {"goal": 1},
        {"goal": "g", "unknown": 1},
        {"goal": "g", "tasks": [{"id": "a", "title": "t"}]},
        {"goal": "g", "config": {"maxConcurrency": 0}},
        {"goal": "g", "config": {"maxConcurrency": 65}},
        {"goal": "g", "config": {"maxConcurrency": 1.5}},
        {"goal": "g", "agents": {"a": {"thinking": "huge"}}},
        {"goal": "g", "tasks": [{"id": "a", "title": "t", "agent": "x", "artifactRefs": []}]},
        [],
        "goal",
    ],
)
def test_inline_form_outside_the_schema_is_malformed(call: Any) -> None:
    assert refused(call).code is ErrorCode.SPEC_MALFORMED


def _catalog(*names: str) -> AgentCatalog:
    loaded = [
        LoadedAgent(
            definition=AgentDefinition(name=n, role=n, description=n, prompt=n),
            source=AgentSource.BUNDLED,
            origin=f"/bundled/{n}.json",
        )
        for n in names
    ]
    return AgentCatalog.merge(loaded, (), ())


def test_inline_unknown_agent_is_remapped_to_fullstack_with_the_upstream_note() -> None:
    tasks, notes = inline_tasks(
        ({"id": "a", "title": "t", "agent": "designer", "description": "d"},),
        _catalog("fullstack"),
        now=NOW,
    )
    assert tasks[0].agent == "fullstack"
    assert tasks[0].description == '[Note: agent "designer" not found, remapped to fullstack]\n\nd'
    assert notes


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([{"id": "a", "title": "t", "agent": "x"}] * 2, "duplicate id 'a'"),
        ([{"id": "a", "title": "t", "agent": "x", "depends": ["z"]}], "unknown task 'z'"),
        (
            [
                {"id": "r", "title": "t", "agent": "x"},
                {"id": "a", "title": "t", "agent": "x", "depends": ["b"]},
                {"id": "b", "title": "t", "agent": "x", "depends": ["a"]},
            ],
            "dependency cycle",
        ),
        ([{"id": "../escape", "title": "t", "agent": "x"}], "path-safe"),
    ],
)
def test_inline_plan_structural_errors_reject_the_plan(
    raw: list[dict[str, Any]], expected: str
) -> None:
    with pytest.raises(SpecError) as caught:
        inline_tasks(tuple(raw), _catalog("x", "fullstack"), now=NOW)
    assert caught.value.code is ErrorCode.PLAN_INVALID
    assert caught.value.message.startswith("Plan rejected:")
    assert expected in caught.value.message


@pytest.mark.parametrize("task_id", ["spec", "Session", "KNOWLEDGE", "con", "Nul.txt", "lpt1"])
def test_an_inline_plan_with_a_reserved_task_id_is_rejected(task_id: str) -> None:
    """Red-team issue 11, finding 6: the one reserved-name rule, in any case."""
    raw = ({"id": task_id, "title": "t", "agent": "x"},)
    with pytest.raises(SpecError) as caught:
        inline_tasks(raw, _catalog("x", "fullstack"), now=NOW)
    assert caught.value.code is ErrorCode.PLAN_INVALID
    assert "tasks[0].id is not a path-safe task id" in caught.value.message

"""Presets: the bundled ``scout``, precedence and trust, ``{task}`` substitution, declared
overrides only, caller-only fields and the stricter-of capture rules; every refusal before any
spawn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from domain.agents import AgentSource
from domain.errors import ErrorCode
from domain.flows.presets import PresetFileInvalid, parse_preset
from tests.fakes.flows import FakePresetDirectory
from tests.unit.application.flows.engine import Engine

WHY = "a quick independent look"
# The bundled presets, by name.
BUNDLED = ["code-review", "map-codebase", "scout"]


def preset_text(name: str, body: dict[str, Any], overrides: str = "cwd,timeoutMs") -> str:
    return (
        f"---\nname: {name}\ndescription: the {name} preset\noverrides: {overrides}\n---\n"
        f"{json.dumps(body)}\n"
    )


def test_scout_expands_to_one_read_only_recon_run(engine: Engine) -> None:
    document = engine.run({"preset": "scout", "task": "where is X parsed?", "why": WHY}).document()
    (child,) = engine.scripted.runtime.spawned
    assert child.request.tools == ("read", "grep", "find", "ls")
    assert child.request.thinking == "low"
    assert child.request.system_prompt == "You are the recon."
    assert child.request.first_prompt.startswith("Scout, read-only: where is X parsed?")
    assert document["mode"] == "single"


def test_task_substitution_is_one_pass(engine: Engine) -> None:
    engine.run({"preset": "scout", "task": "literal {task} here", "why": WHY})
    assert "literal {task} here" in engine.prompts["single"]


def test_a_declared_override_applies(engine: Engine) -> None:
    (engine.cwd / "sub").mkdir()
    engine.run({"preset": "scout", "task": "t", "why": WHY, "cwd": "sub", "thinking": "high"})
    (child,) = engine.scripted.runtime.spawned
    assert child.request.cwd == str(engine.cwd / "sub")
    assert child.request.thinking == "high"


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"concurrency": 2}, ErrorCode.PRESET_OVERRIDE_INVALID),
        ({"agent": "reviewer"}, ErrorCode.PRESET_OVERRIDE_INVALID),
        ({"tasks": []}, ErrorCode.PRESET_OVERRIDE_INVALID),
        ({"tools": "bash"}, ErrorCode.PRESET_OVERRIDE_INVALID),
        ({"preset": "nope"}, ErrorCode.UNKNOWN_PRESET),
        ({"task": None}, ErrorCode.PRESET_TASK_REQUIRED),
        ({"why": None}, ErrorCode.WHY_REQUIRED),
        ({"timeoutMs": 5}, ErrorCode.FLOW_INVALID),
        ({"agentScope": "galaxy"}, ErrorCode.INVALID_SCOPE),
    ],
)
def test_preset_refusals_happen_before_any_spawn(
    engine: Engine, extra: dict[str, Any], code: ErrorCode
) -> None:
    call = {"preset": "scout", "task": "t", "why": WHY, **extra}
    call = {k: v for k, v in call.items() if v is not None}
    assert engine.refuse(call).code is code


def test_an_unknown_preset_names_the_ones_in_scope(engine: Engine) -> None:
    error = engine.refuse({"preset": "nope", "task": "t", "why": WHY}).document()
    assert error["allowed"] == BUNDLED


def test_a_template_cannot_justify_its_own_delegation(tmp_path: Path) -> None:
    body = {"agent": "researcher", "task": "{task}", "why": "the template says so"}
    engine = Engine(tmp_path, presets=FakePresetDirectory(user=(preset_text("mine", body),)))
    assert engine.refuse({"preset": "mine", "task": "t"}).code is ErrorCode.WHY_REQUIRED


def test_user_shadows_bundled_and_project_needs_scope_and_approval(tmp_path: Path) -> None:
    user = preset_text("scout", {"agent": "reviewer", "task": "user {task}"})
    project = preset_text("scout", {"agent": "researcher", "task": "project {task}"})
    presets = FakePresetDirectory(user=(user,), project=(project,))
    engine = Engine(tmp_path / "user", presets=presets)
    engine.run({"preset": "scout", "task": "t", "why": WHY})
    assert engine.prompts["single"] == "user t"
    engine = Engine(tmp_path / "project", presets=presets)
    call = {"preset": "scout", "task": "t", "why": WHY, "agentScope": "all"}
    assert engine.refuse(call).code is ErrorCode.PROJECT_PRESET_APPROVAL_REQUIRED
    engine.run({**call, "confirmProjectAgents": False})
    assert engine.prompts["single"] == "project t"


def test_capture_is_the_stricter_of_template_and_caller(tmp_path: Path) -> None:
    body = {"agent": "researcher", "task": "{task}", "recordContent": False, "redactSecrets": False}
    engine = Engine(tmp_path, presets=FakePresetDirectory(user=(preset_text("quiet", body),)))
    report = engine.run({"preset": "quiet", "task": "t", "why": WHY, "recordContent": True})
    assert report.call.record_content is False
    assert report.call.redact_secrets is True
    assert report.document()["results"][0]["output"] is None


def test_an_expansion_the_template_alone_breaks_is_preset_expansion_invalid(
    tmp_path: Path,
) -> None:
    body = {"agent": "researcher", "task": "look", "cwd": "{task}"}
    engine = Engine(tmp_path, presets=FakePresetDirectory(user=(preset_text("odd", body),)))
    error = engine.refuse({"preset": "odd", "task": "", "why": WHY})
    assert error.code is ErrorCode.PRESET_EXPANSION_INVALID
    assert error.path == "$.cwd"


@pytest.mark.parametrize(
    "text",
    [
        "no frontmatter",
        preset_text("bad", {"agent": "researcher", "task": "{task}"}, overrides="agent"),
        preset_text("bad", {"agent": "researcher", "task": "{task}"}, overrides="why"),
        preset_text("bad", {"agent": "researcher"}),
        preset_text("bad", {"agent": "researcher", "task": "t", "concurrency": 99}),
        "---\nname: bad\n---\n[1]",
        '---\nname: bad\n---\n{"agent": "researcher", "task": "{task}", "task": "again"}',
    ],
)
def test_a_broken_preset_file_never_loads(text: str) -> None:
    with pytest.raises(PresetFileInvalid):
        parse_preset(text, AgentSource.USER, "/u/bad.md")


def test_list_shows_the_presets_in_scope(tmp_path: Path) -> None:
    project = preset_text("theirs", {"agent": "researcher", "task": "{task}"})
    engine = Engine(tmp_path, presets=FakePresetDirectory(project=(project,)))
    listed = engine.run({"list": True}).document()
    assert [(p["name"], p["source"]) for p in listed["presets"]] == [
        (name, "bundled") for name in BUNDLED
    ]
    listed = engine.run({"list": True, "agentScope": "all"}).document()
    assert [p["name"] for p in listed["presets"]] == [*BUNDLED, "theirs"]
    # A preset settled by a harness says which: code-review's typed outcome.
    assert {p["name"]: p.get("result") for p in listed["presets"]}["code-review"] == (
        "code-review-v1"
    )


def test_scouts_generated_token_ceiling_binds_and_a_caller_may_override_it(
    engine: Engine,
) -> None:
    document = engine.run({"preset": "scout", "task": "t", "why": WHY}).document()
    assert document["budget"]["lines"] == ["budget (flow): maxGeneratedTokens 6000"]
    wider = engine.run(
        {"preset": "scout", "task": "t", "why": WHY, "maxGeneratedTokens": 9000, "maxTokens": 50}
    ).document()
    assert wider["budget"]["lines"] == ["budget (flow): maxGeneratedTokens 9000 · maxTokens 50"]


def test_a_caller_may_always_narrow_a_templates_cost_ceiling_never_raise_it(
    tmp_path: Path,
) -> None:
    body = {"agent": "researcher", "task": "{task}", "maxCostUsd": 1.0}
    engine = Engine(tmp_path, presets=FakePresetDirectory(user=(preset_text("paid", body),)))
    call = {"preset": "paid", "task": "t", "why": WHY}
    lines = [
        engine.run({**call, **extra}).document()["budget"]["lines"]
        for extra in ({}, {"maxCostUsd": 0.25}, {"maxCostUsd": 5})
    ]
    assert lines == [["budget (flow): maxCostUsd $1.0000"], ["budget (flow): maxCostUsd $0.2500"],
                     ["budget (flow): maxCostUsd $1.0000"]]  # fmt: skip
    # Without `overrides`, the other ceilings stay the template's business.
    engine = Engine(tmp_path / "fresh", presets=engine.presets)
    refused = engine.refuse({**call, "maxTokens": 10})
    assert refused.code is ErrorCode.PRESET_OVERRIDE_INVALID
    # A malformed caller value is named at the caller's path.
    assert engine.refuse({**call, "maxCostUsd": -1}).path == "$.maxCostUsd"

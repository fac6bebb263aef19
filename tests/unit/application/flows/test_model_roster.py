"""The model roster inside a flow call: Pi's registry is asked lazily, at most once per call and
only when a tier may be needed; what a session already said of its models is used instead; a
tier the scope refuses stops the call before any spawn (``MODEL_SCOPE_UNSATISFIABLE``) unless a
model is named; a role's thinking is clamped to what its model supports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from domain.errors import ErrorCode
from domain.flows.models import AvailableModels, KnownModel
from domain.flows.roster import ModelFiles
from tests.fakes.flows import FakeAgentDirectory, FakeModelSource, agent
from tests.unit.application.flows.engine import WHY, Engine

REGISTRY = AvailableModels(
    (
        KnownModel("acme", "small", False, 0.1, 0.4),
        KnownModel("acme", "big", True, 5.0, 25.0, thinking_map=(("max", "max"),)),
    ),
    "Pi's model registry",
)
SESSION = AvailableModels((KnownModel("own", "only", True, 1.0, 2.0),), "this session's registry")
NO_SCOPE_LEFT = ModelFiles(settings_json=json.dumps({"enabledModels": ["nothing/*"]}))


def _engine(tmp_path: Path, files: ModelFiles | None = None) -> tuple[Engine, FakeModelSource]:
    source = FakeModelSource(files=files or ModelFiles(), available=REGISTRY)
    return Engine(tmp_path, models=source), source


def test_the_registry_is_asked_once_and_only_when_a_tier_may_be_needed(tmp_path: Path) -> None:
    engine, source = _engine(tmp_path)
    engine.run({"list": True})
    engine.refuse({"agent": "researcher", "task": "t"})  # WHY_REQUIRED: before admission
    engine.refuse({"tasks": [{"agent": "researcher", "task": "a"}] * 2, "why": WHY})
    assert source.queries == 0
    lines = engine.run({"showConfig": True}).details["modelRoster"]
    assert source.queries == 1
    assert lines[0].startswith("modelTier.fast: acme/small, thinking off — cheapest model")
    engine.run({"agent": "researcher", "task": "t", "why": WHY, "tier": "deep"})
    assert source.queries == 2
    (child,) = engine.scripted.runtime.spawned
    assert (child.request.model, child.request.thinking) == ("acme/big", "max")


def test_a_call_with_no_ranked_tier_and_no_thinking_level_never_asks_the_registry(
    tmp_path: Path,
) -> None:
    engine, source = _engine(tmp_path)
    engine.run({"agent": "researcher", "task": "t", "why": WHY})
    engine.run({"agent": "researcher", "task": "t", "why": WHY, "tier": "capable"})
    engine.run({"agent": "researcher", "task": "t", "why": WHY, "model": "acme/big"})
    assert source.queries == 0  # about a second of every headless call, saved
    engine.run({"agent": "researcher", "task": "t", "why": WHY, "tier": "fast"})
    engine.run({"tasks": [{"agent": "researcher", "task": "a", "thinking": "high"}], "why": WHY})
    assert source.queries == 2


def test_a_session_that_said_what_it_can_run_is_not_asked_again(tmp_path: Path) -> None:
    engine, source = _engine(tmp_path)
    lines = engine.run(
        {"showConfig": True},
        session_model="own/only",
        session_provider="own",
        session_thinking="medium",
        available_models=SESSION,
    ).details["modelRoster"]
    assert source.queries == 0
    assert lines[1] == (
        "modelTier.capable: own/only, thinking medium — the model this session is running, at "
        "its current thinking level (medium)"
    )
    assert lines[2].startswith("modelTier.deep: own/only, thinking high — the session model")


@pytest.mark.parametrize(
    ("call", "path"),
    [
        ({"agent": "researcher", "task": "t", "tier": "fast"}, "$.tier"),
        ({"tasks": [{"agent": "researcher", "task": "t", "tier": "deep"}]}, "$.tasks[0].tier"),
    ],
)
def test_a_tier_the_scope_refuses_stops_the_call_before_any_spawn(
    tmp_path: Path, call: dict[str, object], path: str
) -> None:
    engine, _ = _engine(tmp_path, NO_SCOPE_LEFT)
    error = engine.refuse({**call, "why": WHY})
    assert error.code is ErrorCode.MODEL_SCOPE_UNSATISFIABLE
    assert error.path == path
    document = error.document()
    assert document["retryable"] is False
    assert "enabledModels" in document["cause"]


def test_a_named_model_clears_the_scope_refusal(tmp_path: Path) -> None:
    engine, _ = _engine(tmp_path, NO_SCOPE_LEFT)
    call = {"agent": "researcher", "task": "t", "tier": "fast", "model": "acme/big", "why": WHY}
    engine.run(call)
    (child,) = engine.scripted.runtime.spawned
    # The refused tier names neither model nor level: the call's model runs at Pi's own level.
    assert (child.request.model, child.request.thinking) == ("acme/big", None)


def test_a_roles_thinking_is_clamped_to_what_its_model_supports(tmp_path: Path) -> None:
    engine, _ = _engine(tmp_path)
    call = {"agent": "researcher", "task": "t", "model": "acme/small", "thinking": "high"}
    engine.run({**call, "why": WHY})
    (child,) = engine.scripted.runtime.spawned
    assert (child.request.model, child.request.thinking) == ("acme/small", "off")


def test_an_agents_own_tier_runs_it_when_nothing_narrower_names_a_model(tmp_path: Path) -> None:
    source = FakeModelSource(available=REGISTRY)
    agents = FakeAgentDirectory(
        bundled=(
            agent("scout", tools=("read",), tier="fast"),
            agent("pinned-scout", tools=("read",), tier="fast", model="acme/big"),
        )
    )
    engine = Engine(tmp_path, agents, models=source)
    engine.run({"agent": "scout", "task": "t", "why": WHY}, session_model="acme/big")
    assert source.queries == 1, "an agent's ranked tier needs the registry"
    engine.run({"agent": "scout", "task": "t", "why": WHY, "model": "acme/big"})
    engine.run({"agent": "pinned-scout", "task": "t", "why": WHY})
    engine.run({"agent": "scout", "task": "t", "why": WHY, "tier": "deep"})
    runs = [(c.request.model, c.request.thinking) for c in engine.scripted.runtime.spawned]
    assert runs == [
        ("acme/small", "off"),  # the agent's fast tier, over the session's model
        ("acme/big", None),  # the call's model, at Pi's own level: not the agent tier's
        ("acme/big", None),  # the agent's model pin comes before its tier
        ("acme/big", "max"),  # the call's tier comes before the agent's
    ]

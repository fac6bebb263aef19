"""The model roster derived from Pi's agent directory and the environment: each tier's model,
level and reason; a tier that cannot be derived is a ``modelRoster.issue``; overrides from
``pi-flows.json`` outrank ``PI_FLOWS_*_MODEL``, which outrank the derivation."""

from __future__ import annotations

import json
from typing import Any

from domain.flows.roster import ModelFiles, Roster, derive_roster


def _models(*providers: tuple[str, list[dict[str, Any]]]) -> str:
    return json.dumps({"providers": {name: {"models": models} for name, models in providers}})


def _model(
    name: str, price_in: float | None, price_out: float | None, **extra: Any
) -> dict[str, Any]:
    found: dict[str, Any] = {"id": name, **extra}
    if price_in is not None:
        found["cost"] = {"input": price_in, "output": price_out}
    return found


CATALOGUE = _models(
    (
        "acme",
        [
            _model("tiny", 0.1, 0.4),
            _model("mid", 1, 5),
            _model("huge", 15, 75, reasoning=True),
        ],
    ),
    ("other", [_model("cheapest", 0.01, 0.02), _model("max", 30, 150)]),
)


def _roster(
    files: ModelFiles, model: str | None = "acme/mid", provider: str | None = None
) -> Roster:
    return derive_roster(files, session_model=model, session_provider=provider)


def _tiers(roster: Roster) -> dict[str, tuple[str | None, str | None, bool]]:
    return {b.tier: (b.model, b.thinking, b.resolved) for b in roster.bindings}


def test_fast_is_the_cheapest_on_the_sessions_provider_and_deep_the_best_reasoning_model() -> None:
    roster = _roster(ModelFiles(models_json=CATALOGUE))
    assert _tiers(roster) == {
        "fast": ("acme/tiny", "low", True),
        "capable": ("acme/mid", None, True),
        "deep": ("acme/huge", "max", True),  # reasoning first, above a pricier plain model
    }
    assert roster.issues == ()
    fast, capable, deep = roster.lines()
    assert fast == (
        "modelTier.fast: acme/tiny, thinking low — cheapest priced model in models.json on acme"
    )
    assert capable == (
        "modelTier.capable: acme/mid — the model this run was started with (--model)"
    )
    assert "most capable priced reasoning model" in deep


def test_without_the_sessions_provider_fast_is_the_cheapest_anywhere() -> None:
    roster = _roster(ModelFiles(models_json=CATALOGUE), model="x", provider="nowhere")
    assert _tiers(roster)["fast"] == ("other/cheapest", "low", True)
    assert _tiers(roster)["capable"] == ("nowhere/x", None, True)


def test_deep_differs_by_thinking_level_when_the_session_model_is_already_the_best() -> None:
    roster = _roster(ModelFiles(models_json=CATALOGUE), model="huge", provider="acme")
    assert _tiers(roster)["deep"] == ("acme/huge", "max", True)
    assert "differs by thinking level (max), not by model" in roster.lines()[2]


def test_the_enabled_models_scope_limits_the_ranking() -> None:
    settings = json.dumps({"enabledModels": ["acme/t*", "mid:high"]})
    roster = _roster(ModelFiles(models_json=CATALOGUE, settings_json=settings), provider="other")
    assert _tiers(roster)["fast"] == ("acme/tiny", "low", True)
    assert _tiers(roster)["deep"] == ("acme/mid", "max", True)  # not huge nor other/max
    assert "within enabledModels" in roster.lines()[0]


def test_a_scope_with_nothing_to_rank_anchors_to_the_session_model() -> None:
    settings = json.dumps({"enabledModels": ["nothing/*"]})
    roster = _roster(ModelFiles(models_json=CATALOGUE, settings_json=settings))
    assert _tiers(roster)["fast"] == ("acme/mid", "low", True)
    assert _tiers(roster)["deep"] == ("acme/mid", "max", True)
    assert "anchors to the session model" in roster.lines()[0]


def test_a_tier_that_cannot_be_derived_is_an_issue_and_falls_through() -> None:
    unpriced = _models(("fake", [_model("fake-model", None, None)]))
    roster = _roster(ModelFiles(models_json=unpriced), model="fake-model", provider="fake")
    assert _tiers(roster) == {
        "fast": (None, None, False),
        "capable": ("fake/fake-model", None, True),
        "deep": (None, None, False),
    }
    assert len(roster.issues) == 2
    assert roster.issues[0].startswith("modelTier.fast not derived: no model in models.json")
    assert "PI_FLOWS_FAST_MODEL" in roster.issues[0]
    assert roster.lines()[3].startswith("modelRoster.issue: modelTier.fast not derived")


def test_capable_without_model_names_pis_configured_default_or_none() -> None:
    settings = json.dumps({"defaultProvider": "acme", "defaultModel": "mid"})
    roster = _roster(ModelFiles(settings_json=settings), model=None)
    assert _tiers(roster)["capable"] == ("acme/mid", None, True)
    assert "Pi's configured default (settings.json)" in roster.lines()[1]
    bare = _roster(ModelFiles(), model=None)
    assert _tiers(bare)["capable"] == (None, None, True)


def test_config_outranks_environment_which_outranks_derivation() -> None:
    flows = json.dumps(
        {"models": {"deep": {"model": "acme/mid", "thinking": "high"}, "capable": "default"}}
    )
    files = ModelFiles(
        models_json=CATALOGUE,
        flows_json=flows,
        fast_env="other/max:minimal",
        deep_env="other/cheapest",
    )
    roster = _roster(files)
    assert _tiers(roster) == {
        "fast": ("other/max", "minimal", True),
        "capable": (None, None, True),
        "deep": ("acme/mid", "high", True),
    }
    assert roster.lines()[0].endswith("— set in PI_FLOWS_FAST_MODEL")
    assert "pi-flows.json models.capable (no --model" in roster.lines()[1]


def test_a_thinking_only_override_keeps_the_derived_model() -> None:
    flows = json.dumps({"models": {"fast": {"thinking": "off"}}})
    roster = _roster(ModelFiles(models_json=CATALOGUE, flows_json=flows))
    assert _tiers(roster)["fast"] == ("acme/tiny", "off", True)


def test_configuration_that_does_not_parse_is_an_issue_not_a_silent_default() -> None:
    files = ModelFiles(
        models_json="{not json",
        settings_json="[]",
        flows_json=json.dumps(
            {"models": {"fast": "a b", "huge": "x", "deep": {"thinking": "extreme"}}}
        ),
        deep_env="has space",
        read_problems=("models.json: cannot be read (Permission denied); ignored",),
    )
    issues = _roster(files).issues
    assert issues[0] == "models.json: cannot be read (Permission denied); ignored"
    joined = "\n".join(issues)
    for expected in (
        "models.json is not JSON",
        "settings.json is not a JSON object",
        "PI_FLOWS_DEEP_MODEL: model must be a model name without whitespace",
        "pi-flows.json models.fast: model must be",
        "pi-flows.json models.huge: not a tier",
        "pi-flows.json models.deep: thinking must be one of",
    ):
        assert expected in joined

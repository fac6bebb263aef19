"""The model roster: each tier's model, level and reason, derived from what Pi's registry says
this install can run (else from ``models.json``), inside the ``enabledModels`` scope and never
widened past it; levels clamped to what the chosen model supports; a tier that cannot be derived
is a ``modelRoster.issue``; overrides from ``pi-flows.json`` outrank ``PI_FLOWS_*_MODEL``, which
outrank the derivation."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from domain.flows.models import AvailableModels, KnownModel, matches_scope, scope_reference
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


# tiny reasons up to high (no map), mid up to xhigh, huge up to max; other's do not reason.
CATALOGUE = _models(
    (
        "acme",
        [
            _model("tiny", 0.1, 0.4, reasoning=True),
            _model("mid", 1, 5, reasoning=True, thinkingLevelMap={"xhigh": "xhigh"}),
            _model("huge", 15, 75, reasoning=True, thinkingLevelMap={"max": "max"}),
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
    assert "most capable priced model in models.json (extended thinking first" in deep


def test_without_the_sessions_provider_fast_is_the_cheapest_anywhere() -> None:
    roster = _roster(ModelFiles(models_json=CATALOGUE), model="x", provider="nowhere")
    # It does not reason: low is lowered to the only level it has, as Pi would.
    assert _tiers(roster)["fast"] == ("other/cheapest", "off", True)
    assert roster.lines()[0].endswith("it does not support thinking low, so off")
    assert _tiers(roster)["capable"] == ("nowhere/x", None, True)


def test_deep_differs_by_thinking_level_when_the_session_model_is_already_the_best() -> None:
    roster = _roster(ModelFiles(models_json=CATALOGUE), model="huge", provider="acme")
    assert _tiers(roster)["deep"] == ("acme/huge", "max", True)
    assert "differs by thinking level (max), not by model" in roster.lines()[2]


def test_the_enabled_models_scope_limits_the_ranking() -> None:
    settings = json.dumps({"enabledModels": ["acme/t*", "mid:high"]})
    roster = _roster(ModelFiles(models_json=CATALOGUE, settings_json=settings), provider="other")
    assert _tiers(roster)["fast"] == ("acme/tiny", "low", True)
    # Not huge nor other/max; the session model is the best in scope, at the most it supports.
    assert _tiers(roster)["deep"] == ("acme/mid", "xhigh", True)
    assert "within enabledModels" in roster.lines()[0]


def test_a_scope_with_nothing_to_rank_anchors_to_the_session_model() -> None:
    settings = json.dumps({"enabledModels": ["nothing/*"]})
    roster = _roster(ModelFiles(models_json=CATALOGUE, settings_json=settings))
    assert _tiers(roster)["fast"] == ("acme/mid", "low", True)
    assert _tiers(roster)["deep"] == ("acme/mid", "xhigh", True)
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
        "fast": ("other/max", "off", True),  # minimal, lowered: other/max does not reason
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


# -- from Pi's model registry -----------------------------------------------------------------


def _known(
    ref: str, price_in: float, price_out: float, *, levels: dict[str, str | None] | None = None
) -> KnownModel:
    """A registry model; ``levels``: its thinkingLevelMap (``None``: it does not reason)."""
    provider, model_id = ref.split("/")
    return KnownModel(
        provider,
        model_id,
        reasoning=levels is not None,
        input_price=price_in,
        output_price=price_out,
        thinking_map=tuple((levels or {}).items()),
        context_window=200_000,
    )


REGISTRY = AvailableModels(
    (
        _known("anthropic/claude-haiku-4-5", 1, 5, levels={}),
        _known("anthropic/claude-sonnet-4-5", 3, 15, levels={}),
        _known("anthropic/claude-opus-5", 5, 25, levels={"xhigh": "xhigh", "max": "max"}),
        _known("openai/gpt-mini", 0.1, 0.4),
        KnownModel("openai", "tiny-context", False, 0.01, 0.01, context_window=8_000),
        KnownModel("openai", "text-embedding-3", False, 0.001, 0.0, context_window=None),
    ),
    "this session's model registry",
)


def _session(
    model: str | None, thinking: str | None = "medium", settings: str | None = None
) -> Roster:
    provider = model.split("/")[0] if model else None
    return derive_roster(
        ModelFiles(settings_json=settings),
        session_model=model,
        session_provider=provider,
        session_thinking=thinking,
        available=REGISTRY,
    )


def test_built_in_models_with_credentials_are_ranked_without_any_models_json() -> None:
    roster = _session("anthropic/claude-sonnet-4-5")
    assert _tiers(roster) == {
        "fast": ("anthropic/claude-haiku-4-5", "low", True),  # cheapest on the session's own
        "capable": ("anthropic/claude-sonnet-4-5", "medium", True),
        "deep": ("anthropic/claude-opus-5", "max", True),
    }
    assert roster.issues == ()
    assert roster.lines()[:3] == [
        "modelTier.fast: anthropic/claude-haiku-4-5, thinking low — cheapest model this install "
        "can run on anthropic",
        "modelTier.capable: anthropic/claude-sonnet-4-5, thinking medium — the model this "
        "session is running, at its current thinking level (medium)",
        "modelTier.deep: anthropic/claude-opus-5, thinking max — most capable model this install "
        "can run (extended thinking first, then the highest output price)",
    ]


def test_deep_prefers_a_model_that_thinks_past_high_over_a_pricier_one_that_cannot() -> None:
    # Pi's own catalogue: an older Opus costs $75 per million output tokens and stops at
    # high; the newer ones think to max at $25. Every reasoning model reaches high, so only
    # xhigh/max tell extended thinking apart.
    registry = AvailableModels(
        (
            _known("anthropic/claude-opus-4-1", 15, 75, levels={}),
            _known("anthropic/claude-opus-4-8", 5, 25, levels={"xhigh": "xhigh", "max": "max"}),
            _known("anthropic/claude-haiku-4-5", 1, 5, levels={}),
        ),
        "Pi's model registry",
    )
    roster = derive_roster(
        ModelFiles(),
        session_model=None,
        session_provider=None,
        session_thinking=None,
        available=registry,
    )
    assert _tiers(roster)["deep"] == ("anthropic/claude-opus-4-8", "max", True)


def test_models_too_small_or_embedding_are_never_ranked() -> None:
    # Unscoped, on openai: gpt-mini, not the cheaper toy-context or embedding models.
    roster = _session("openai/gpt-mini", thinking=None)
    assert _tiers(roster)["fast"][0] == "openai/gpt-mini"
    assert roster.known == REGISTRY.models  # still known: a pin on them is clamped


def test_a_registry_that_cannot_be_read_falls_back_to_models_json_and_says_so() -> None:
    failed = AvailableModels((), "Pi's model registry", problem="no answer within 20 s")
    roster = derive_roster(
        ModelFiles(models_json=CATALOGUE),
        session_model="acme/mid",
        session_provider=None,
        available=failed,
    )
    assert _tiers(roster)["fast"] == ("acme/tiny", "low", True)
    assert roster.issues == (
        "Pi's model registry could not be read (no answer within 20 s); the tiers rank the "
        "models of models.json alone",
    )
    assert roster.lines()[0].endswith("cheapest priced model in models.json on acme")


def test_a_registry_warning_and_no_credentials_at_all_are_issues() -> None:
    empty = AvailableModels((), "Pi's model registry", warning="Failed to parse models.json")
    roster = derive_roster(ModelFiles(), session_model=None, session_provider=None, available=empty)
    assert roster.issues[0] == "Pi's model registry: Failed to parse models.json"
    assert "this install can run no model (no provider has credentials)" in roster.issues[1]
    assert _tiers(roster)["fast"] == (None, None, False)


def test_when_the_session_runs_the_best_model_deep_differs_by_thinking_level_only() -> None:
    roster = _session("anthropic/claude-opus-5", thinking="high")
    assert _tiers(roster)["deep"] == ("anthropic/claude-opus-5", "max", True)
    assert "differs by thinking level (max), not by model" in roster.lines()[2]
    at_max = _session("anthropic/claude-opus-5", thinking="max")
    assert _tiers(at_max)["deep"] == ("anthropic/claude-opus-5", "max", True)
    assert at_max.lines()[2].endswith("(max): deep is capable")


def test_the_session_thinking_level_is_clamped_to_the_session_model() -> None:
    # Sonnet has no xhigh in its map: the level Pi would run is high (nearest below).
    roster = _session("anthropic/claude-sonnet-4-5", thinking="xhigh")
    assert _tiers(roster)["capable"] == ("anthropic/claude-sonnet-4-5", "high", True)


# -- the scope ladder: rank within it, anchor, bind, refuse; never widen ------------------------


def test_the_scope_ranks_registry_models_inside_it_only() -> None:
    scope = json.dumps({"enabledModels": ["anthropic/claude-s*", "claude-haiku-4-5:low"]})
    roster = _session("anthropic/claude-sonnet-4-5", settings=scope)
    assert _tiers(roster)["fast"] == ("anthropic/claude-haiku-4-5", "low", True)
    # Opus is not enabled: the session model is the best in scope.
    assert _tiers(roster)["deep"] == ("anthropic/claude-sonnet-4-5", "high", True)
    assert "within enabledModels" in roster.lines()[2]


def test_without_a_session_model_the_tiers_bind_to_a_model_the_scope_names() -> None:
    scope = json.dumps({"enabledModels": ["local/*", "local/llama-70b:high"]})
    roster = _session(None, thinking=None, settings=scope)
    assert _tiers(roster)["fast"] == ("local/llama-70b", "low", True)
    assert _tiers(roster)["deep"] == ("local/llama-70b", "max", True)
    assert "binds to the model enabledModels names (local/llama-70b)" in roster.lines()[0]


def test_a_scope_with_nothing_to_name_refuses_its_tiers_and_never_widens() -> None:
    scope = json.dumps({"enabledModels": ["nothing/*"]})
    roster = _session(None, thinking=None, settings=scope)
    fast, _, deep = roster.bindings
    assert (fast.refused, fast.resolved, fast.model) == (True, False, None)
    assert deep.refused
    assert roster.lines()[0].startswith("modelTier.fast: (none: MODEL_SCOPE_UNSATISFIABLE)")
    assert roster.issues[0].startswith("modelTier.fast refused (MODEL_SCOPE_UNSATISFIABLE): ")


def test_only_a_configured_model_clears_a_scope_refusal() -> None:
    settings = json.dumps({"enabledModels": ["nothing/*"]})
    flows = json.dumps(
        {"models": {"fast": "anthropic/claude-haiku-4-5", "deep": {"thinking": "max"}}}
    )
    roster = derive_roster(
        ModelFiles(settings_json=settings, flows_json=flows),
        session_model=None,
        session_provider=None,
        available=REGISTRY,
    )
    fast, _, deep = roster.bindings
    assert (fast.model, fast.refused, fast.resolved) == ("anthropic/claude-haiku-4-5", False, True)
    assert deep.refused  # a level alone names no model
    assert [i.split(" ")[0] for i in roster.issues] == ["modelTier.deep"]


_REFS = st.sampled_from([m.ref for m in REGISTRY.models] + ["local/llama-70b"])
_PATTERNS = st.lists(
    st.sampled_from(
        ["anthropic/*", "claude-opus-5", "openai/gpt-*", "*haiku*:low", "local/*", "none/x"]
    ),
    min_size=1,
    max_size=3,
)


@given(scope=_PATTERNS, session=st.one_of(st.none(), _REFS))
def test_a_derived_tier_is_always_inside_the_scope_or_the_session_model(
    scope: list[str], session: str | None
) -> None:
    roster = derive_roster(
        ModelFiles(settings_json=json.dumps({"enabledModels": scope})),
        session_model=session,
        session_provider=None,
        session_thinking="medium" if session else None,
        available=REGISTRY,
    )
    named = {r for r in map(scope_reference, scope) if r is not None}
    for binding in roster.bindings:
        if binding.tier == "capable" or binding.model is None:
            continue
        enabled = any(
            m.ref == binding.model and any(matches_scope(p, m) for p in scope)
            for m in REGISTRY.models
        )
        assert enabled or binding.model in named or binding.model == session, binding

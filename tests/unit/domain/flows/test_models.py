"""The models a Pi install can run, as the roster ranks them: the thinking levels each supports
and the level it runs at when asked for another, exactly as pi-ai 0.80.10's
``getSupportedThinkingLevels`` / ``clampThinkingLevel`` decide (the adapter test
``tests/integration/test_pi_model_registry.py`` checks them against pi-ai itself); a registry
listing parsed with malformed entries skipped; scope patterns and the references they name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.flows.models import (
    KnownModel,
    find_model,
    matches_scope,
    parse_available,
    scope_reference,
)
from domain.names import THINKING_LEVELS


def _model(reasoning: bool = True, **levels: str | None) -> KnownModel:
    return KnownModel("p", "m", reasoning, 1.0, 2.0, thinking_map=tuple(levels.items()))


@pytest.mark.parametrize(
    ("model", "supported"),
    [
        (_model(reasoning=False), ("off",)),
        (_model(), ("off", "minimal", "low", "medium", "high")),  # xhigh, max need the map
        (_model(xhigh="xhigh", max="max"), THINKING_LEVELS),
        (_model(off=None, minimal=None), ("low", "medium", "high")),
        (_model(max="max", xhigh=None), ("off", "minimal", "low", "medium", "high", "max")),
    ],
)
def test_supported_levels_follow_the_thinking_map(
    model: KnownModel, supported: tuple[str, ...]
) -> None:
    assert model.thinking_levels() == supported


@pytest.mark.parametrize(
    ("model", "asked", "runs"),
    [
        (_model(reasoning=False), "max", "off"),
        (_model(), "max", "high"),  # nothing above max: the nearest below
        (_model(), "xhigh", "high"),
        (_model(off=None, minimal=None), "off", "low"),  # the nearest above first
        (_model(low=None), "low", "medium"),
        (_model(max="max", xhigh=None), "xhigh", "max"),
        (_model(xhigh="xhigh", max="max"), "max", "max"),
        (_model(), "extreme", "off"),  # not a level: the lowest supported
        (  # nothing supported
            KnownModel(
                "p", "m", True, 1.0, 2.0, thinking_map=tuple((v, None) for v in THINKING_LEVELS)
            ),
            "high",
            "off",
        ),
    ],
)
def test_a_level_is_clamped_as_pi_clamps_it(model: KnownModel, asked: str, runs: str) -> None:
    assert model.clamp(asked) == runs


_MAPS = st.dictionaries(
    st.sampled_from(THINKING_LEVELS), st.one_of(st.none(), st.sampled_from(["a", "b"]))
)


@given(reasoning=st.booleans(), levels=_MAPS, asked=st.sampled_from(THINKING_LEVELS))
def test_a_clamped_level_is_supported_and_stable(
    reasoning: bool, levels: dict[str, str | None], asked: str
) -> None:
    model = KnownModel("p", "m", reasoning, None, None, thinking_map=tuple(levels.items()))
    supported = model.thinking_levels()
    runs = model.clamp(asked)
    assert runs in supported or (not supported and runs == "off")
    assert model.clamp(runs) == runs
    if asked in supported:
        assert runs == asked


def test_a_registry_listing_skips_what_it_cannot_read() -> None:
    models, skipped = parse_available(
        [
            {
                "provider": "anthropic",
                "id": "claude-opus-5",
                "reasoning": True,
                "cost": {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25},
                "thinkingLevelMap": {"off": None, "max": "max", "weird": "x", "low": 3},
                "contextWindow": 1_000_000,
            },
            {"provider": "openai", "id": "o", "cost": {"input": -1, "output": True}},
            {"id": "no-provider"},
            "not an object",
        ]
    )
    assert skipped == 2
    opus, unpriced = models
    assert (opus.ref, opus.reasoning, opus.input_price, opus.output_price) == (
        "anthropic/claude-opus-5",
        True,
        5.0,
        25.0,
    )
    # An unknown level is dropped; any value but null maps a level, as pi-ai reads the map.
    assert opus.thinking_map == (("off", None), ("max", "max"), ("low", "3"))
    assert opus.context_window == 1_000_000
    assert (unpriced.priced, unpriced.reasoning) == (False, False)


def test_scope_patterns_and_the_references_they_name() -> None:
    opus = KnownModel("anthropic", "claude-opus-5", True, 5.0, 25.0)
    assert matches_scope("anthropic/*", opus)
    assert matches_scope("claude-opus-5:high", opus)
    assert not matches_scope("openai/*", opus)
    assert scope_reference("anthropic/claude-opus-5:high") == "anthropic/claude-opus-5"
    assert scope_reference("claude-opus-5") == "claude-opus-5"
    assert scope_reference("anthropic/claude-*") is None
    assert scope_reference("  ") is None
    assert find_model((opus,), "claude-opus-5") is opus
    assert find_model((opus,), "other/claude-opus-5") is None


def test_a_bare_model_id_is_found_on_the_provider_the_child_runs_on() -> None:
    plain = KnownModel("fake", "fake-model", False, 0.0, 0.0)
    thinker = KnownModel("fake-anthropic", "fake-model", True, 3.0, 15.0)
    models = (plain, thinker)
    assert find_model(models, "fake-model", provider="fake-anthropic") is thinker
    assert find_model(models, "fake-model", provider="fake") is plain
    assert find_model(models, "fake-anthropic/fake-model") is thinker
    # Two providers define the id and none is named: which one Pi runs is not known here,
    # so no level is clamped to either (clamping to the plain one turned thinking off).
    assert find_model(models, "fake-model") is None
    assert find_model((thinker,), "fake-model") is thinker

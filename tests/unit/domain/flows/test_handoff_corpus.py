"""The fixed injection corpus (tests/handoff_corpus/) at each policy level, and the rates
docs/flows.md states: they must be ``scripts/handoff_rates.py``'s output, never typed."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from domain.flows.handoff import HandoffGuard
from domain.flows.handoff_policy import HandoffPolicy, resolve_policy
from domain.flows.handoff_record import HandoffAction

REPO = Path(__file__).resolve().parents[4]


def rates_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "handoff_rates", REPO / "scripts/handoff_rates.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RATES = rates_script()
CORPUS: list[tuple[str, dict[str, Any]]] = [
    (kind, entry) for kind in ("benign", "malicious") for entry in RATES.load(kind)
]


@pytest.mark.parametrize("policy", list(HandoffPolicy), ids=str)
@pytest.mark.parametrize(
    ("kind", "entry"), CORPUS, ids=lambda v: v if isinstance(v, str) else v["id"]
)
def test_the_corpus_at_each_policy_level(
    policy: HandoffPolicy, kind: str, entry: dict[str, Any]
) -> None:
    """Whatever a hop was flagged for, the policy decides alone what crosses: the payload under
    a notice (warn), a marker carrying none of it (quarantine), nothing (fail); an unflagged
    hop crosses fenced under every policy."""
    guard = HandoffGuard(resolve_policy(policy, {}, "chain"))
    for index, hop in enumerate(entry["hops"]):
        guard, prepared = guard.prepare(f"step-{index + 1}", "output of x (y)", hop)
        delivery = guard.deliver(prepared, f"step-{index + 2}")
        action = delivery.record.action
        if not prepared.flagged:
            assert action is HandoffAction.PASSED
            assert delivery.block is not None
            assert prepared.text in delivery.block
        elif policy is HandoffPolicy.WARN:
            assert action is HandoffAction.NOTICE
            assert delivery.block is not None
            assert delivery.block.startswith("[Handoff injection check:")
            assert prepared.text in delivery.block
        elif policy is HandoffPolicy.QUARANTINE:
            assert action is HandoffAction.QUARANTINED
            assert delivery.block is not None
            assert prepared.text not in delivery.block
        else:
            assert action is HandoffAction.FAILED
            assert delivery.block is None
            break


def test_every_compositional_attack_is_caught_at_its_last_hop_and_not_before() -> None:
    composed = [e for kind, e in CORPUS if kind == "malicious" and len(e["hops"]) > 1]
    caught = []
    for entry in composed:
        guard = HandoffGuard(resolve_policy(HandoffPolicy.WARN, {}, "chain"))
        flagged = []
        for index, hop in enumerate(entry["hops"]):
            guard, prepared = guard.prepare(f"step-{index + 1}", "l", hop)
            flagged.append(bool(prepared.compositional))
            assert not prepared.markers, entry["id"]
        if any(flagged):
            assert flagged[-1], entry["id"]
            assert not any(flagged[:-1]), entry["id"]
            caught.append(entry["id"])
    assert len([e for e in composed if len(e["hops"]) >= 3]) >= 3
    assert set(caught) >= {"compose-override", "compose-reveal", "compose-role", "compose-curl"}


def test_the_rates_in_the_docs_are_the_scripts_output() -> None:
    docs = (REPO / "docs/flows.md").read_text(encoding="utf-8")
    assert RATES.report() in docs

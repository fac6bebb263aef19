"""Measures the handoff injection policy over its fixed corpus and prints the rates docs/flows.md
states: ``uv run python scripts/handoff_rates.py``.

The corpus is ``tests/handoff_corpus/{benign,malicious}.jsonl``: one handoff sequence a line
(``hops``: the outputs handed on, one per boundary, in order; a sequence of several hops is a
compositional case). Each sequence runs through a fresh guard (``domain.flows.handoff``) at
each policy level, exactly as a chain hands its steps' outputs on. A sequence is *blocked*
when some hop's payload did not cross (quarantined or failed), and *noticed* when some hop
crossed under a notice. ``tests/unit/domain/flows/test_handoff_corpus.py`` checks docs/flows.md
carries this script's output verbatim, so the numbers there are measured, not typed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from domain.flows.handoff import HandoffGuard  # noqa: E402
from domain.flows.handoff_policy import HandoffPolicy, resolve_policy  # noqa: E402
from domain.flows.handoff_record import HandoffAction  # noqa: E402

CORPUS = REPO / "tests" / "handoff_corpus"
WITHHELD = (HandoffAction.QUARANTINED, HandoffAction.FAILED)


def load(kind: str) -> list[dict[str, Any]]:
    lines = (CORPUS / f"{kind}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def actions(hops: list[str], policy: HandoffPolicy) -> list[HandoffAction]:
    """What the guard did at each hop of one sequence (a fail stops the sequence, as it stops
    a chain: later hops are never prepared)."""
    guard = HandoffGuard(resolve_policy(policy, {}, "chain"))
    found: list[HandoffAction] = []
    for index, hop in enumerate(hops):
        key = f"step-{index + 1}"
        guard, prepared = guard.prepare(key, f"output of {key} (researcher)", hop)
        action = guard.deliver(prepared, f"step-{index + 2}").record.action
        found.append(action)
        if action is HandoffAction.FAILED:
            break
    return found


def _rate(count: int, total: int) -> str:
    return f"{count}/{total} ({100 * count / total:.1f}%)"


def measure() -> dict[str, Any]:
    corpus = {kind: load(kind) for kind in ("benign", "malicious")}
    levels: dict[str, dict[str, list[str]]] = {}
    for policy in HandoffPolicy:
        outcome: dict[str, list[str]] = {}
        for kind, entries in corpus.items():
            blocked, noticed = [], []
            for entry in entries:
                done = actions(entry["hops"], policy)
                if any(action in WITHHELD for action in done):
                    blocked.append(entry["id"])
                elif HandoffAction.NOTICE in done:
                    noticed.append(entry["id"])
            outcome[f"{kind}-blocked"] = blocked
            outcome[f"{kind}-noticed"] = noticed
        levels[str(policy)] = outcome
    return {"sizes": {kind: len(entries) for kind, entries in corpus.items()}, "levels": levels}


def report() -> str:
    measured = measure()
    benign, malicious = measured["sizes"]["benign"], measured["sizes"]["malicious"]
    lines = [
        f"Corpus: {malicious} malicious and {benign} benign handoff sequences "
        "(tests/handoff_corpus/).",
        "",
        "| Policy | Malicious blocked | Malicious crossing under a notice "
        "| Benign blocked (false positive) | Benign crossing under a notice |",
        "|---|---|---|---|---|",
    ]
    for level, outcome in measured["levels"].items():
        lines.append(
            f"| `{level}` | {_rate(len(outcome['malicious-blocked']), malicious)} "
            f"| {_rate(len(outcome['malicious-noticed']), malicious)} "
            f"| {_rate(len(outcome['benign-blocked']), benign)} "
            f"| {_rate(len(outcome['benign-noticed']), benign)} |"
        )
    warn = measured["levels"]["warn"]
    flagged_malicious = set(warn["malicious-noticed"])
    missed = [e["id"] for e in load("malicious") if e["id"] not in flagged_malicious]
    lines += [
        "",
        f"Missed (never flagged): {', '.join(missed) or 'none'}.",
        f"Benign flagged: {', '.join(warn['benign-noticed']) or 'none'}.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(report())

"""An orchestrate commander's decomposition: how its answer is read, the rules a decomposition
must keep (``ORCHESTRATE_NO_SUBTASKS``, ``DECOMPOSITION_INVALID``, ``DECOMPOSITION_CYCLE``), its
dependency waves, and the budget headroom projection (``BUDGET_HEADROOM_EXCEEDED``).

The answer is read like a control token (``domain.flows.control``): a contracted commander's
schema-validated ``data.subtasks`` only; otherwise the whole answer (one Markdown code fence
around it tolerated) or its first non-empty line is one JSON array. Two shapes, never mixed: a
flat list of strings (truncated to ``maxSubtasks``, ids ``1``, ``2``...), or objects ``{id,
objective|task, dependsOn?, effortWeight 1..5, scope?, nonGoals?, inputs?, expectedReturn?,
acceptanceEvidence?}`` (above ``maxSubtasks`` refused, since dropping one could strand the
others). Pure: messages name ids (which passed a pattern), counts and keys, never task text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from domain.errors import ErrorCode
from domain.flows.budget import Ceilings, Dimension
from domain.flows.call_roles import Graph, GraphNode
from domain.flows.control import first_line
from domain.flows.graph import _find_cycle, waves
from domain.usage import Usage

SUBTASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MIN_WEIGHT, MAX_WEIGHT = 1, 5
_TEXT_FIELDS = {
    "scope": "Scope",
    "nonGoals": "Non-goals",
    "inputs": "Inputs",
    "expectedReturn": "Expected return",
    "acceptanceEvidence": "Acceptance evidence",
}
_KEYS = frozenset({"id", "objective", "task", "dependsOn", "effortWeight", *_TEXT_FIELDS})
_FENCED = re.compile(r"^```[A-Za-z]*\n(?P<body>.*)\n```$", re.DOTALL)


class Refused(Exception):
    """A decomposition the flow cannot run: its code and why (no caller text)."""

    def __init__(self, code: ErrorCode, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


@attrs.frozen
class Subtask:
    """One unit of work: ``id``, what to achieve, what it waits for, its relative effort, and
    the brief's other fields rendered as ``(heading, text)`` pairs."""

    id: str
    objective: str
    depends_on: tuple[str, ...] = ()
    effort_weight: int = MIN_WEIGHT
    details: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class Decomposition:
    subtasks: tuple[Subtask, ...]
    flat: bool
    # Flat entries beyond ``maxSubtasks``, dropped.
    dropped: int = 0

    def waves(self) -> tuple[tuple[str, ...], ...]:
        nodes = tuple(
            GraphNode(agent="recon", task="", id=s.id, depends_on=s.depends_on)
            for s in self.subtasks
        )
        return waves(Graph(nodes))

    def document(self) -> list[dict[str, Any]]:
        """The decomposition as a reviewer reads it: normalised, one object per subtask."""
        return [
            {
                "id": s.id,
                "objective": s.objective,
                "dependsOn": list(s.depends_on),
                "effortWeight": s.effort_weight,
                **dict(s.details),
            }
            for s in self.subtasks
        ]


def answer_array(text: str) -> object:
    """The JSON array an uncontracted commander answered, or ``None`` when there is none."""
    stripped = text.strip()
    fenced = _FENCED.match(stripped)
    for candidate in (fenced["body"] if fenced else stripped, first_line(text) or ""):
        if candidate.lstrip().startswith("["):
            try:
                return json.loads(candidate)
            except ValueError:
                continue
    return None


def read_decomposition(answer: object, max_subtasks: int, flat_cap: int) -> Decomposition:
    """``answer`` (the JSON value read off the commander) as a decomposition, or
    :class:`Refused`. ``flat_cap`` bounds a flat list below ``max_subtasks`` (the fan-out cap)."""
    if not isinstance(answer, list):
        raise Refused(ErrorCode.DECOMPOSITION_INVALID, "the commander's answer is no JSON array")
    if not answer:
        raise Refused(ErrorCode.ORCHESTRATE_NO_SUBTASKS, "the commander returned no subtask")
    if all(isinstance(item, str) for item in answer):
        kept = [item for item in answer if item.strip()][: min(max_subtasks, flat_cap)]
        if not kept:
            raise Refused(ErrorCode.ORCHESTRATE_NO_SUBTASKS, "every subtask was blank")
        subtasks = tuple(Subtask(str(i), text.strip()) for i, text in enumerate(kept, start=1))
        return Decomposition(subtasks, flat=True, dropped=len(answer) - len(kept))
    if not all(isinstance(item, dict) for item in answer):
        raise Refused(
            ErrorCode.DECOMPOSITION_INVALID,
            "the subtasks mix shapes: all strings, or all objects",
        )
    if len(answer) > max_subtasks:
        raise Refused(
            ErrorCode.DECOMPOSITION_INVALID,
            f"{len(answer)} structured subtasks exceed maxSubtasks {max_subtasks}",
        )
    subtasks = tuple(_subtask(index, item) for index, item in enumerate(answer))
    _check_ids(subtasks)
    return Decomposition(subtasks, flat=False)


def _subtask(index: int, item: Mapping[str, Any]) -> Subtask:
    where = f"subtask {index + 1}"
    unknown = sorted(key for key in item if key not in _KEYS)
    if unknown:
        raise Refused(ErrorCode.DECOMPOSITION_INVALID, f"{where} has unknown keys {unknown}")
    found_id = item.get("id")
    if not isinstance(found_id, str) or SUBTASK_ID.match(found_id) is None:
        raise Refused(
            ErrorCode.DECOMPOSITION_INVALID,
            f"{where} needs an id: a letter or digit, then letters, digits, _ . - (at most 64)",
        )
    objective = item.get("objective", item.get("task"))
    if not isinstance(objective, str) or not objective.strip():
        raise Refused(
            ErrorCode.DECOMPOSITION_INVALID, f"subtask '{found_id}' has no objective (or task)"
        )
    depends = item.get("dependsOn", [])
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        raise Refused(
            ErrorCode.DECOMPOSITION_INVALID, f"subtask '{found_id}' dependsOn is no list of ids"
        )
    weight = item.get("effortWeight", MIN_WEIGHT)
    if isinstance(weight, bool) or not isinstance(weight, int):
        weight = -1
    if not MIN_WEIGHT <= weight <= MAX_WEIGHT:
        raise Refused(
            ErrorCode.DECOMPOSITION_INVALID,
            f"subtask '{found_id}' effortWeight must be an integer {MIN_WEIGHT}..{MAX_WEIGHT}",
        )
    details = tuple(
        (heading, _text(item[key])) for key, heading in _TEXT_FIELDS.items() if key in item
    )
    return Subtask(found_id, objective.strip(), tuple(depends), weight, details)


def _text(value: object) -> str:
    if isinstance(value, list):
        return "; ".join(str(part) for part in value)
    return str(value)


def _check_ids(subtasks: Sequence[Subtask]) -> None:
    seen: set[str] = set()
    for subtask in subtasks:
        if subtask.id in seen:
            raise Refused(ErrorCode.DECOMPOSITION_INVALID, f"duplicate subtask id '{subtask.id}'")
        seen.add(subtask.id)
    for subtask in subtasks:
        for dependency in subtask.depends_on:
            if dependency not in seen:
                raise Refused(
                    ErrorCode.DECOMPOSITION_INVALID,
                    f"subtask '{subtask.id}' depends on '{dependency}', which is no subtask's id",
                )
    nodes = tuple(
        GraphNode(agent="recon", task="", id=s.id, depends_on=s.depends_on) for s in subtasks
    )
    cycle = _find_cycle(Graph(nodes))
    if cycle is not None:
        raise Refused(
            ErrorCode.DECOMPOSITION_CYCLE,
            "the subtasks' dependencies form a cycle: " + " -> ".join([*cycle, cycle[0]]),
        )


# -- budget headroom ----------------------------------------------------------------------------


def spent(usages: Sequence[Usage]) -> dict[Dimension, float]:
    """pi-flows' accounting of runs' usage, by ceiling."""
    return {
        Dimension.COST: sum(u.cost for u in usages),
        Dimension.GENERATED: sum(u.output_tokens for u in usages),
        Dimension.TOKENS: sum(u.input_tokens + u.output_tokens for u in usages),
    }


def headroom_breach(
    ceilings: Ceilings,
    spend: Mapping[Dimension, float],
    per_unit: Mapping[Dimension, float],
    remaining_weight: int,
) -> str | None:
    """Why the remaining work cannot fit: the first ceiling whose projection (``spend`` plus
    ``remaining_weight`` times the spend per weight unit) exceeds it; ``None`` when all fit."""
    for dimension, limit in ceilings.limits().items():
        if limit is None:
            continue
        projected = spend[dimension] + remaining_weight * per_unit[dimension]
        if projected > limit:
            return (
                f"projected {dimension} {_shown(projected)} (spent {_shown(spend[dimension])} + "
                f"remaining weight {remaining_weight} x {_shown(per_unit[dimension])} per unit) "
                f"exceeds the ceiling {_shown(limit)}"
            )
    return None


def _shown(value: float) -> str:
    return f"{value:.4f}" if not float(value).is_integer() else str(int(value))

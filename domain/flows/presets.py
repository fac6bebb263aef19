"""Presets: a named, reviewed call template a caller runs with ``{"preset": name, "task": ...}``.

A preset file is frontmatter (``name``, ``description``, ``overrides``, optionally ``result``:
the harness that settles it, ``code-review-v1`` the one known) and a JSON body, the call it
expands to. Expansion (:func:`expand`) substitutes ``{task}``, applies the caller's
fields the preset declares in ``overrides``, the caller-only fields and the stricter-of capture
rules, then the result is validated and run as an ordinary call. Presets do not bypass mode
bounds: the expanded call goes through ``parse_call`` like any other.

Precedence is the agents': bundled < user < project by ``name``; project presets need
``agentScope`` ``project`` or ``all`` and, headless, ``confirmProjectAgents: false``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from domain.agents import AgentSource
from domain.errors import ErrorCode
from domain.flows.call import MODE_KEYS, UNBUILT_MODES, FlowCall, parse_call
from domain.flows.code_review import CODE_REVIEW_RESULT
from domain.flows.errors import FlowError, Problem, refuse
from domain.flows.handoff_policy import HandoffPolicy, stricter_minimums
from domain.flows.roles import SCOPES
from domain.front_matter import FrontMatterInvalid, split_front_matter
from domain.names import AGENT_NAME
from domain.strict_json import JsonDecodeFailure, decode_json

NAME = re.compile(rf"^{AGENT_NAME}$")
# A template cannot justify its own delegation, opt its source into trust, or take the
# shared-write exception on the caller's behalf: these come from the caller only.
CALLER_ONLY = frozenset({"why", "agentScope", "confirmProjectAgents", "allowSharedWriteCwd"})
CAPTURE = frozenset({"recordContent", "redactSecrets"})
# A caller may always set these, and the stricter of caller and template wins: a template
# cannot lower the caller's handoff policy, nor a caller the template's.
HANDOFF = frozenset({"handoffPolicy", "modeHandoffPolicy"})
# Trace export is the caller's evidence: a caller may always set it. A template may turn the
# strict gate on, never off (its ``traceStrict: false`` is dropped: the caller and
# ``PI_FLOWS_TRACE_STRICT`` decide).
TRACE = frozenset({"traceFile", "traceLabel", "traceContext", "traceStrict"})
# A caller may always narrow a template's monetary authority (seed 004: ``maxCostUsd`` is a safe
# caller control): the lower of both ceilings binds, so a caller cannot raise the template's.
COST = frozenset({"maxCostUsd"})
# The mode's own fields are the preset's: never overridable, declared or not.
WORKFLOW_SHAPE = frozenset({*MODE_KEYS, *UNBUILT_MODES, "preset"})
PLACEHOLDER = "{task}"
PRESET_KEYS = frozenset({"name", "description", "overrides", "result"})
# The results a harness settles (``domain.flows.code_review``): a preset naming another would
# run as a plain call and silently skip the checks its author asked for.
RESULTS = frozenset({CODE_REVIEW_RESULT})
POLICY_NAMES = frozenset(str(policy) for policy in HandoffPolicy)


class PresetFileInvalid(ValueError):
    pass


@attrs.frozen
class Preset:
    name: str
    description: str
    overrides: frozenset[str]
    body: dict[str, Any] = attrs.field(eq=False, hash=False)
    source: AgentSource
    origin: str
    # The harness that settles the call (``RESULTS``); ``None``: the mode's own outcome.
    result: str | None = None

    def uses_task(self) -> bool:
        return PLACEHOLDER in json.dumps(self.body)

    def document(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source.value,
            "overrides": sorted(self.overrides),
            **({"result": self.result} if self.result is not None else {}),
        }


def parse_preset(text: str, source: AgentSource, origin: str) -> Preset:
    """Front matter (``domain/front_matter.py``: ``name``, ``description``, ``overrides``),
    then one JSON object. The body must expand
    to a valid call (checked with a stand-in task and why), so a broken file never loads."""
    try:
        front = split_front_matter(text, PRESET_KEYS)
    except FrontMatterInvalid as invalid:
        raise PresetFileInvalid(str(invalid)) from None
    fields = front.fields
    name = fields.get("name", "")
    if not NAME.match(name):
        raise PresetFileInvalid("name must be 1..64 of A-Z a-z 0-9 . _ - (a letter or digit first)")
    overrides = frozenset(o.strip() for o in fields.get("overrides", "").split(",") if o.strip())
    if overrides & (WORKFLOW_SHAPE | CALLER_ONLY):
        raise PresetFileInvalid("overrides may not name a mode's fields or a caller-only field")
    try:
        # The project's one strict decoder: duplicate keys, NaN and the like are refused.
        body = decode_json(front.body.encode("utf-8"))
    except JsonDecodeFailure as failure:
        raise PresetFileInvalid(f"the body is not one JSON object: {failure}") from None
    if not isinstance(body, dict):
        raise PresetFileInvalid("the body is not one JSON object")
    result = fields.get("result")
    if result is not None and result not in RESULTS:
        raise PresetFileInvalid(f"result must be one of {', '.join(sorted(RESULTS))}")
    preset = Preset(
        name, fields.get("description", ""), overrides, body, source, origin, result=result
    )
    try:
        parse_call(_expanded_body(preset, "stand-in task", {"why": "stand-in"}))
    except FlowError as error:
        raise PresetFileInvalid(f"the body does not expand to a valid call: {error}") from None
    return preset


def _substitute(value: Any, task: str) -> Any:
    """``{task}`` in every string of the body, in one pass (the task is never re-scanned)."""
    if isinstance(value, str):
        return task.join(value.split(PLACEHOLDER))
    if isinstance(value, list):
        return [_substitute(item, task) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, task) for key, item in value.items()}
    return value


def _expanded_body(preset: Preset, task: str, caller: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in preset.body.items() if k not in CALLER_ONLY}
    expanded: dict[str, Any] = _substitute(body, task)
    for key in CALLER_ONLY & caller.keys():
        expanded[key] = caller[key]
    for key in preset.overrides & caller.keys():
        expanded[key] = caller[key]
    # Stricter of both (each defaults to true): content is recorded only if both allow it,
    # and redacted if either asks; a template cannot turn the caller's redaction off.
    if "recordContent" in caller or "recordContent" in body:
        expanded["recordContent"] = (
            caller.get("recordContent", True) is True and body.get("recordContent", True) is True
        )
    if "redactSecrets" in caller or "redactSecrets" in body:
        expanded["redactSecrets"] = (
            caller.get("redactSecrets", True) is True or body.get("redactSecrets") is True
        )
    expanded.update(_stricter_handoff(caller, body))
    if "maxCostUsd" in caller:
        ceilings = [caller["maxCostUsd"], body.get("maxCostUsd")]
        numbers = [c for c in ceilings if _is_number(c)]
        # A caller's malformed value stays, so validation names it at the caller's path.
        expanded["maxCostUsd"] = min(numbers) if _is_number(ceilings[0]) else ceilings[0]
    for key in TRACE & caller.keys():
        expanded[key] = caller[key]
    if "traceStrict" in caller or "traceStrict" in body:
        given = caller.get("traceStrict", False)
        # A caller's malformed value stays, so validation names it at the caller's path.
        expanded["traceStrict"] = (
            given or body.get("traceStrict") is True if isinstance(given, bool) else given
        )
    return expanded


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _stricter_handoff(caller: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The handoff fields of the expanded call. A value that is not a policy is kept as the
    caller wrote it, for ``parse_call`` to refuse at its own path."""
    found: dict[str, Any] = {}
    policies = [caller.get("handoffPolicy"), body.get("handoffPolicy")]
    if all(p is None or p in POLICY_NAMES for p in policies):
        named = [HandoffPolicy(p) for p in policies if p is not None]
        if named:
            found["handoffPolicy"] = str(max(named, key=lambda p: p.rank))
    elif "handoffPolicy" in caller:
        found["handoffPolicy"] = caller["handoffPolicy"]
    minimums = [caller.get("modeHandoffPolicy", {}), body.get("modeHandoffPolicy", {})]
    if all(
        isinstance(m, dict) and all(isinstance(v, str) and v in POLICY_NAMES for v in m.values())
        for m in minimums
    ):
        merged = stricter_minimums(
            {k: HandoffPolicy(v) for k, v in minimums[0].items()},
            {k: HandoffPolicy(v) for k, v in minimums[1].items()},
        )
        if merged:
            found["modeHandoffPolicy"] = {k: str(v) for k, v in merged.items()}
    elif "modeHandoffPolicy" in caller:
        found["modeHandoffPolicy"] = caller["modeHandoffPolicy"]
    return found


@attrs.frozen
class PresetProblem:
    """A preset file that did not load, and why (``list`` shows these)."""

    origin: str
    reason: str
    source: AgentSource


@attrs.frozen
class PresetCatalog:
    """Every preset file that loaded, from every source, and the ones that did not."""

    loaded: tuple[Preset, ...] = ()
    problems: tuple[PresetProblem, ...] = ()

    def _ordered(self, scope: str) -> list[Preset]:
        """The scope's presets, lowest precedence first (bundled < user < project, then path)."""
        allowed = SCOPES[scope]
        order = {AgentSource.BUNDLED: 0, AgentSource.USER: 1, AgentSource.PROJECT: 2}
        ranked = sorted(self.loaded, key=lambda p: (order[p.source], p.origin))
        return [preset for preset in ranked if preset.source in allowed]

    def in_scope(self, scope: str) -> tuple[Preset, ...]:
        """One winner per name among the scope's sources (bundled < user < project), by name."""
        winners = {preset.name: preset for preset in self._ordered(scope)}
        return tuple(winners[name] for name in sorted(winners))

    def shadowed_in_scope(self, scope: str) -> tuple[tuple[Preset, Preset], ...]:
        """Each preset a later one of the same name hides, with the one that hides it."""
        winners = {preset.name: preset for preset in self._ordered(scope)}
        return tuple(
            (preset, winners[preset.name])
            for preset in self._ordered(scope)
            if winners[preset.name] is not preset
        )

    def problems_in_scope(self, scope: str) -> tuple[PresetProblem, ...]:
        return tuple(p for p in self.problems if p.source in SCOPES[scope])


def expand(
    call: dict[str, Any], presets: Sequence[Preset], *, interactive: bool = False
) -> dict[str, Any]:
    """The call ``{"preset": name, ...}`` as the call its preset expands to (then validated by
    ``parse_call`` like any call). ``presets``: the ones in the call's ``agentScope``."""
    name = call.get("preset")
    if not isinstance(name, str) or not NAME.match(name):
        raise refuse(ErrorCode.FLOW_INVALID, "$.preset", "must be a preset name")
    preset = next((p for p in presets if p.name == name), None)
    if preset is None:
        raise refuse(
            ErrorCode.UNKNOWN_PRESET,
            "$.preset",
            f"no preset '{name}' in agentScope '{call.get('agentScope', 'user')}'",
            measured=name,
            allowed=[p.name for p in presets],
        )
    if (
        preset.source is AgentSource.PROJECT
        and call.get("confirmProjectAgents", True) is not False
        and not interactive
    ):
        raise refuse(
            ErrorCode.PROJECT_PRESET_APPROVAL_REQUIRED,
            "$.preset",
            f"preset '{name}' is a project preset ({preset.origin}); a headless run cannot ask "
            "to approve it",
            measured=True,
            allowed=False,
        )
    allowed = preset.overrides | CALLER_ONLY | CAPTURE | HANDOFF | TRACE | COST | {"preset", "task"}
    invalid = sorted(key for key in call if key not in allowed)
    if invalid:
        shown = invalid[0] if NAME.match(invalid[0]) else "(a key not shown)"
        raise refuse(
            ErrorCode.PRESET_OVERRIDE_INVALID,
            f"$.{shown}" if shown == invalid[0] else "$",
            f"preset '{name}' does not let a call set {len(invalid)} of its fields",
            measured=len(invalid),
            allowed=sorted(preset.overrides),
        )
    task = call.get("task")
    if task is not None and not isinstance(task, str):
        raise refuse(ErrorCode.FLOW_INVALID, "$.task", "must be a string")
    if task is None and preset.uses_task():
        raise refuse(ErrorCode.PRESET_TASK_REQUIRED, "$.task", f"preset '{name}' needs a task")
    return _expanded_body(preset, task or "", call)


def parse_preset_call(
    call: dict[str, Any], presets: Sequence[Preset], *, interactive: bool = False
) -> FlowCall:
    """``expand`` then ``parse_call``. A violation at a field the caller gave (or ``why``)
    keeps its own code; one the template alone caused is ``PRESET_EXPANSION_INVALID``."""
    expanded = expand(call, presets, interactive=interactive)
    try:
        return parse_call(expanded)
    except FlowError as error:
        caller_keys = {*call, "why"}
        if any(_root_key(p.path) in caller_keys for p in error.problems):
            raise
        preset = next(p for p in presets if p.name == call["preset"])
        raise FlowError(
            tuple(
                Problem(
                    ErrorCode.PRESET_EXPANSION_INVALID,
                    p.path,
                    f"preset '{preset.name}' ({preset.origin}): {p.message}",
                    p.measured,
                    p.allowed,
                )
                for p in error.problems
            )
        ) from None


def _root_key(path: str) -> str:
    return re.split(r"[.\[]", path.removeprefix("$").removeprefix("."), maxsplit=1)[0]

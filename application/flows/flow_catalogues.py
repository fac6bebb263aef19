"""A flow call as the catalogues make it: a preset call expanded from the presets in its scope
(with the project preset an interactive run must have approved), and what ``list`` answers."""

from __future__ import annotations

from typing import Any

from application.flows.admission import ProjectFile
from application.ports import AgentDirectory, PresetDirectory
from domain.agents import AgentSource, LoadedAgent
from domain.errors import ErrorCode
from domain.flows.call import FlowCall, parse_call
from domain.flows.errors import refuse
from domain.flows.presets import Preset, parse_preset_call
from domain.flows.roles import SCOPES, scoped


def expand_call(
    document: object, presets: PresetDirectory, cwd: str, *, interactive: bool
) -> tuple[FlowCall, tuple[ProjectFile, ...]]:
    """A preset call is expanded from the presets in its scope first (docs/flows.md); a
    project preset an interactive run must have approved comes back with it."""
    if not isinstance(document, dict) or "preset" not in document:
        return parse_call(document), ()
    scope = document.get("agentScope", "user")
    if not isinstance(scope, str) or scope not in SCOPES:
        raise refuse(
            ErrorCode.INVALID_SCOPE,
            "$.agentScope",
            "must be one of user, project, all",
            allowed=list(SCOPES),
        )
    in_scope = presets.catalog(cwd).in_scope(scope)
    call = parse_preset_call(document, in_scope, interactive=interactive)
    preset = next(p for p in in_scope if p.name == document["preset"])
    if preset.source is AgentSource.PROJECT and call.confirm_project_agents:
        return call, (ProjectFile("preset", preset.name, preset.origin, "$.preset"),)
    return call, ()


def listing(
    call: FlowCall, agents: AgentDirectory, presets: PresetDirectory, cwd: str
) -> dict[str, Any]:
    """``list``: the agents and presets in the call's scope, and what could not be read."""
    catalog = scoped(agents.catalog(cwd), call.agent_scope)
    found = presets.catalog(cwd)
    return {
        "agentScope": call.agent_scope,
        "agents": [
            {
                "name": entry.name,
                "description": entry.definition.description,
                "source": entry.source.value,
                "model": entry.definition.model,
                "thinking": entry.definition.thinking,
                "tier": entry.definition.tier,
                "tools": None if entry.definition.tools is None else list(entry.definition.tools),
            }
            for entry in catalog.enabled()
        ],
        "presets": [preset.document() for preset in found.in_scope(call.agent_scope)],
        "discoveryIssues": [f"{p.origin}: {p.reason}" for p in catalog.problems]
        + [f"{p.origin}: {p.reason}" for p in found.problems_in_scope(call.agent_scope)]
        + [shadowing("agent", lost, catalog.get(lost.name)) for lost in catalog.shadowed]
        + [
            shadowing("preset", lost, winner)
            for lost, winner in found.shadowed_in_scope(call.agent_scope)
        ],
    }


def shadowing(kind: str, lost: LoadedAgent | Preset, winner: object) -> str:
    """A discovery issue for a definition a later source hides: which one and by what."""
    where = (
        f" by the {winner.source.value} {kind} in {winner.origin}"
        if isinstance(winner, LoadedAgent | Preset)
        else ""
    )
    return f"{lost.origin}: {kind} '{lost.name}' ({lost.source.value}) is shadowed{where}"

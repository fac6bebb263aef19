"""What a role runs as: its agent in the call's scope, its model and thinking by the seed's
precedence, its tools and working directory; and a tier's binding (``TierBinding``), which the
model roster (``domain.flows.roster``) derives.

Precedence, narrowest first (the seed's order): the role's ``model`` > the role's ``tier`` >
the call's ``model`` > the call's ``tier`` > the agent's ``model`` pin > the session's model
(``--model``) > Pi's default. A tier the roster could not resolve falls through to the next
rung. ``thinking``: the role's > the call's > the resolved tier's > the agent's > Pi's own.
"""

from __future__ import annotations

import posixpath

import attrs

from domain.agents import AgentCatalog, AgentDefinition, AgentSource, LoadedAgent
from domain.flows.call import FlowCall, FlowTask
from domain.flows.tools import ToolChoice

SCOPES: dict[str, frozenset[AgentSource]] = {
    "user": frozenset({AgentSource.BUNDLED, AgentSource.USER}),
    "project": frozenset({AgentSource.BUNDLED, AgentSource.PROJECT}),
    "all": frozenset(AgentSource),
}


def scoped(catalog: AgentCatalog, scope: str) -> AgentCatalog:
    """``catalog`` as the scope sees it: ``user`` = bundled + user, ``project`` = bundled +
    project, ``all`` = all three (a definition another scope shadows comes back)."""
    allowed = SCOPES[scope]
    everything = (*catalog.entries, *catalog.shadowed)

    def layer(source: AgentSource) -> list[LoadedAgent]:
        if source not in allowed:
            return []
        return sorted((e for e in everything if e.source is source), key=lambda e: e.origin)

    return AgentCatalog.merge(
        layer(AgentSource.BUNDLED),
        layer(AgentSource.USER),
        layer(AgentSource.PROJECT),
        problems=[p for p in catalog.problems if p.source is None or p.source in allowed],
    )


@attrs.frozen
class TierBinding:
    """One rung of the roster: ``model``/``thinking`` ``None`` where it does not pin one."""

    tier: str
    model: str | None
    thinking: str | None
    resolved: bool
    reason: str

    def line(self) -> str:
        model = self.model if self.model is not None else "(no --model: falls through)"
        thinking = f", thinking {self.thinking}" if self.thinking is not None else ""
        return f"modelTier.{self.tier}: {model}{thinking} — {self.reason}"


@attrs.frozen
class ResolvedRole:
    agent: str
    source: AgentSource
    system_prompt: str
    cwd: str
    model: str | None
    thinking: str | None
    tools: ToolChoice


def _tier(roster: tuple[TierBinding, ...], tier: str | None) -> TierBinding | None:
    found = next((b for b in roster if b.tier == tier), None)
    return found if found is not None and found.resolved else None


def resolve_role(
    call: FlowCall,
    role: FlowTask,
    loaded: LoadedAgent,
    *,
    base_cwd: str,
    roster: tuple[TierBinding, ...],
    session_model: str | None,
) -> ResolvedRole:
    """``role`` of ``call`` as it will run. ``base_cwd`` is absolute; a relative ``cwd``
    resolves against it (the call's own ``cwd`` first)."""
    agent: AgentDefinition = loaded.definition
    role_tier = _tier(roster, role.tier)
    call_tier = _tier(roster, call.tier)
    model = next(
        (
            choice
            for choice in (
                role.model,
                role_tier.model if role_tier else None,
                call.model,
                call_tier.model if call_tier else None,
                agent.model,
                session_model,
            )
            if choice is not None
        ),
        None,
    )
    tier = role_tier or call_tier
    thinking = next(
        (
            choice
            for choice in (
                role.thinking,
                call.thinking,
                tier.thinking if tier is not None else None,
                agent.thinking,
            )
            if choice is not None
        ),
        None,
    )
    tools = role.tools or call.tools or ToolChoice(agent.tools)
    cwd = posixpath.normpath(posixpath.join(base_cwd, call.cwd or "", role.cwd or ""))
    return ResolvedRole(
        agent=agent.name,
        source=loaded.source,
        system_prompt=agent.prompt,
        cwd=cwd,
        model=model,
        thinking=thinking,
        tools=tools,
    )

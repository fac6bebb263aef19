"""What a role runs as: its agent in the call's scope, its model and thinking by the seed's
precedence, its tools and working directory; and a tier's binding (``TierBinding``), which the
model roster (``domain.flows.roster``) derives.

Precedence, narrowest first (the seed's order): the role's ``model`` > the role's ``tier`` >
the call's ``model`` > the call's ``tier`` > the agent's ``model`` pin > the agent's ``tier``
(pi-flows' agent files) > the session's model (``--model``) > Pi's default. A tier the roster
could not resolve falls through to the next rung; one the model scope refused is refused for the
role unless a ``model`` of the role, the call or the agent applies. ``thinking``: the role's >
the call's > the resolved tier's > the agent's > Pi's own, clamped to a level the resolved model
supports when that model is known.
"""

from __future__ import annotations

import posixpath

import attrs

from domain.agents import AgentCatalog, AgentDefinition, AgentSource, LoadedAgent
from domain.errors import ErrorCode
from domain.flows.call import FlowCall
from domain.flows.call_roles import FlowTask
from domain.flows.models import KnownModel, find_model
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
    # The model scope leaves this tier nothing it may name: a role asking for it with no model
    # of its own is refused (``MODEL_SCOPE_UNSATISFIABLE``) rather than run on Pi's default.
    refused: bool = False

    def line(self) -> str:
        model = self.model if self.model is not None else "(no --model: falls through)"
        if self.refused:
            model = f"(none: {ErrorCode.MODEL_SCOPE_UNSATISFIABLE})"
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
    # The tier the role asked for that the model scope refused, when no model of the role, the
    # call or the agent clears it: admission refuses the role (``MODEL_SCOPE_UNSATISFIABLE``).
    refused_tier: str | None = None


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
    models: tuple[KnownModel, ...] = (),
    session_provider: str | None = None,
) -> ResolvedRole:
    """``role`` of ``call`` as it will run. ``base_cwd`` is absolute; a relative ``cwd``
    resolves against it (the call's own ``cwd`` first). ``models``: the models this install
    can run, whose supported thinking levels bound the role's (as Pi's own clamp does);
    ``session_provider``: the ``--provider`` the child runs on, which a bare model id is
    resolved with."""
    agent: AgentDefinition = loaded.definition
    role_tier = _tier(roster, role.tier)
    call_tier = _tier(roster, call.tier)
    agent_tier = _tier(roster, agent.tier)
    model = next(
        (
            choice
            for choice in (
                role.model,
                role_tier.model if role_tier else None,
                call.model,
                call_tier.model if call_tier else None,
                agent.model,
                agent_tier.model if agent_tier else None,
                session_model,
            )
            if choice is not None
        ),
        None,
    )
    # The agent's tier counts only where nothing above it chose a model: a model named by the
    # role, the call or the agent's pin is run with their thinking, not the agent tier's.
    chosen_above = (role.model, call.model, agent.model)
    by_agent = agent_tier if all(choice is None for choice in chosen_above) else None
    tier = role_tier or call_tier or by_agent
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
    known = find_model(models, model, provider=session_provider)
    if thinking is not None and known is not None:
        thinking = known.clamp(thinking)
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
        refused_tier=_refused_tier(call, role, agent, roster),
    )


def _refused_tier(
    call: FlowCall, role: FlowTask, agent: AgentDefinition, roster: tuple[TierBinding, ...]
) -> str | None:
    """The refused tier the role asks for, walking the precedence: an explicit ``model``
    (role, call, agent) met first clears a refusal; a tier further down does not, as it is not
    what the role asked for."""
    refused: str | None = None
    for explicit, tier in (
        (role.model, role.tier),
        (call.model, call.tier),
        (agent.model, agent.tier),
    ):
        if explicit is not None:
            return None
        binding = next((b for b in roster if b.tier == tier), None) if tier else None
        if binding is not None and binding.refused:
            refused = refused or binding.tier
        elif refused is None and binding is not None and binding.resolved:
            return None  # the tier asked for first resolved: a later one is not asked for
    return refused

"""What ``showConfig`` answers (defaults, caps and the model roster), and the roster one flow
call resolves its tiers against."""

from __future__ import annotations

from typing import Any

from application.ports import ModelSource
from domain.agents import AgentCatalog, LoadedAgent
from domain.flows.call import (
    DEFAULT_CONCURRENCY,
    DEFAULT_TIMEOUT_MS,
    MAX_PARALLEL_TASKS,
    SCHEMAS,
    FlowCall,
)
from domain.flows.handoff_policy import DEFAULT_POLICY
from domain.flows.models import AvailableModels
from domain.flows.roster import ModelFiles, Roster, derive_roster
from domain.flows.runs import OUTPUT_CAP_BYTES


def call_roster(
    models: ModelSource | None,
    *,
    session_model: str | None,
    session_provider: str | None,
    session_thinking: str | None,
    available: AvailableModels | None,
    ask_registry: bool = True,
) -> Roster:
    """The roster from the model files and, unless the session already said what it can run
    (``available``), from what the model source's registry says: asked here, once per call,
    and only when ``ask_registry``."""
    if available is None and models is not None and ask_registry:
        available = models.available_models()
    return derive_roster(
        models.model_files() if models is not None else ModelFiles(),
        session_model=session_model,
        session_provider=session_provider,
        session_thinking=session_thinking,
        available=available,
    )


def config_details(roster: Roster, grace_ms: int) -> dict[str, Any]:
    return {
        "config": {
            "defaultConcurrency": DEFAULT_CONCURRENCY,
            "maxParallelTasks": MAX_PARALLEL_TASKS,
            "defaultTimeoutMs": DEFAULT_TIMEOUT_MS,
            "errorGraceMs": grace_ms,
            "modelVisibleOutputCapBytes": OUTPUT_CAP_BYTES,
            "defaultAgentScope": "user",
            "recordContent": True,
            "redactSecrets": True,
            "handoffPolicy": str(DEFAULT_POLICY),
            "modes": [str(mode) for mode in SCHEMAS],
            "schemas": {str(mode): name for mode, name in SCHEMAS.items()},
        },
        "modelRoster": roster.lines(),
    }


RANKED_TIERS = frozenset({"fast", "deep"})


def needs_registry(call: FlowCall, agents: AgentCatalog | None = None) -> bool:
    """Whether ``call`` needs the models Pi's registry says this install can run: a role that
    may resolve a ranked tier (``fast``/``deep``: its own, the call's, or, from ``agents``, its
    agent's when it pins no model), or a thinking level to clamp to the model a role runs.
    ``capable`` is the session's model and a pinned model is what it names, so a
    call with neither is resolved from the session, models.json and the configuration alone
    (Pi clamps a level itself when the child starts; the clamp here is what reports and traces
    show)."""
    roles = [role for _, role in call.roles()]
    return (
        call.tier in RANKED_TIERS
        or any(role.tier in RANKED_TIERS for role in roles)
        or call.thinking is not None
        or any(role.thinking is not None for role in roles)
        or (agents is not None and any(_ranked_agent(agents, role.agent) for role in roles))
    )


def _ranked_agent(agents: AgentCatalog, name: str) -> bool:
    found = agents.get(name)
    if not isinstance(found, LoadedAgent):
        return False
    return found.definition.model is None and found.definition.tier in RANKED_TIERS

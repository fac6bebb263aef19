"""How a flow's roles are given: the settings every role may carry (``RoleSettings``), a task
or chain step (``FlowTask``), a graph and its nodes, and a mode's role by reference
(``AgentRef``). Values only; ``domain.flows.call`` parses a call into them."""

from __future__ import annotations

import attrs

from domain.flows.contracts import Contract
from domain.flows.tools import ToolChoice


@attrs.frozen(kw_only=True)
class RoleSettings:
    """How a role runs, set on a role or on the whole call: a role's ``None`` falls back to
    the call's, then to the agent's (``domain.flows.roles``, ``domain.flows.modes``)."""

    cwd: str | None = None
    model: str | None = None
    tier: str | None = None
    thinking: str | None = None
    tools: ToolChoice | None = None
    # Return requirements (``domain.flows.contracts``).
    return_contract: str | None = None
    require_evidence: bool | None = None
    contract: Contract | None = None


@attrs.frozen
class FlowTask(RoleSettings):
    """A parallel task or a chain step: which agent does what, with its own role settings."""

    agent: str
    task: str


@attrs.frozen
class GraphNode(FlowTask):
    """A graph node: a role as a task holds it, with the node's id and the ids it depends on."""

    id: str
    depends_on: tuple[str, ...] = ()

    def as_task(self) -> FlowTask:
        """The node's role alone, as a parallel task or a chain step holds it."""
        return FlowTask(
            **{field.name: getattr(self, field.name) for field in attrs.fields(FlowTask)}
        )


@attrs.frozen
class Graph:
    nodes: tuple[GraphNode, ...]
    # Synthesises the terminal nodes' outputs once the graph has run.
    debrief: AgentRef | None = None


@attrs.frozen
class AgentRef(RoleSettings):
    """A mode's role given by reference (``{"agent": "controller"}``): its agent and settings;
    ``task``, where the mode lets a role carry its own, is a template over ``{task}``."""

    agent: str
    task: str | None = None

    def as_task(self, goal: str) -> FlowTask:
        """The role as a task: its own ``task`` when it has one, else ``goal``."""
        settings = {field.name: getattr(self, field.name) for field in attrs.fields(RoleSettings)}
        return FlowTask(agent=self.agent, task=self.task or goal, **settings)

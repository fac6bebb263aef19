"""The validated specification as immutable values. Built only by ``domain.spec.parse``."""

from __future__ import annotations

from typing import Literal

import attrs

from domain.names import Thinking


@attrs.frozen
class TaskSpec:
    id: str
    title: str
    description: str
    agent: str
    depends: tuple[str, ...]
    inherit_context: bool
    artifact_refs: tuple[str, ...]


@attrs.frozen
class AgentOverride:
    """One roster entry of the spec's ``agents`` object: per-squad model and thinking."""

    name: str
    model: str | None
    thinking: Thinking | None


@attrs.frozen
class SquadConfig:
    max_concurrency: int = attrs.field(validator=[attrs.validators.ge(1), attrs.validators.le(64)])
    auto_unblock: bool
    max_retries: int = attrs.field(validator=[attrs.validators.ge(0), attrs.validators.le(20)])
    # Absent from the spec on purpose (§3): review is unconditional for every squad.
    review_on_complete: bool = attrs.field(default=True, init=False)


@attrs.frozen
class ArtifactSpec:
    id: str
    path: str
    sha256: str
    bytes: int = attrs.field(validator=attrs.validators.ge(0))
    purpose: str
    media_type: str | None


@attrs.frozen
class SquadSpec:
    """A file specification that passed decoding, schema, limits and plan checks."""

    schema_version: Literal[1]
    goal: str
    tasks: tuple[TaskSpec, ...]
    agents: tuple[AgentOverride, ...]
    config: SquadConfig
    artifacts: tuple[ArtifactSpec, ...]

    def task(self, task_id: str) -> TaskSpec:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    def agent_override(self, name: str) -> AgentOverride | None:
        for agent in self.agents:
            if agent.name == name:
                return agent
        return None

    def artifact(self, artifact_id: str) -> ArtifactSpec:
        for artifact in self.artifacts:
            if artifact.id == artifact_id:
                return artifact
        raise KeyError(artifact_id)

"""Strict squad specifications: bytes in, an immutable ``SquadSpec`` or a coded ``SpecError``.

``domain.spec.parse`` holds the validation pipeline; it is not imported here, so that code
needing only the model values (every child process) does not load ``jsonschema``.
"""

from domain.spec.model import AgentOverride, ArtifactSpec, SquadConfig, SquadSpec, TaskSpec

__all__ = ["AgentOverride", "ArtifactSpec", "SquadConfig", "SquadSpec", "TaskSpec"]

"""Strict squad specifications: bytes in, an immutable ``SquadSpec`` or a coded ``SpecError``."""

from domain.spec.model import AgentOverride, ArtifactSpec, SquadConfig, SquadSpec, TaskSpec
from domain.spec.parse import ValidatedSpec, check_sha256_argument, parse_spec

__all__ = [
    "AgentOverride",
    "ArtifactSpec",
    "SquadConfig",
    "SquadSpec",
    "TaskSpec",
    "ValidatedSpec",
    "check_sha256_argument",
    "parse_spec",
]

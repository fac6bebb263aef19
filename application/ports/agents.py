"""The agent definitions a squad's working directory sees."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from domain.agents import AgentCatalog

if TYPE_CHECKING:
    # Only the annotation: the presets module imports the flow call model (jsonschema, cattrs).
    from domain.flows.models import AvailableModels
    from domain.flows.presets import PresetCatalog
    from domain.flows.roster_config import ModelFiles

__all__ = ["AgentDirectory", "ModelSource", "PresetDirectory"]


class AgentDirectory(Protocol):
    """Agent definitions as seen from a squad's working directory."""

    def catalog(self, cwd: str) -> AgentCatalog: ...


class PresetDirectory(Protocol):
    """Flow presets (docs/flows.md) as seen from a working directory: bundled, user, project."""

    def catalog(self, cwd: str) -> PresetCatalog: ...


class ModelSource(Protocol):
    """What Pi's agent directory (``models.json``, ``settings.json``, ``pi-flows.json``) and
    the ``PI_FLOWS_*_MODEL`` variables say about models, read afresh at each call; and what
    Pi's model registry says this install can run."""

    def model_files(self) -> ModelFiles: ...

    def available_models(self) -> AvailableModels | None:
        """Asked afresh (a second or so: the caller asks once per flow call, only when a tier
        may be needed); ``None``: no registry here. A registry that could not be read is an
        ``AvailableModels`` with its ``problem``, never an exception."""
        ...

"""The agent definitions a squad's working directory sees."""

from __future__ import annotations

from typing import Protocol

from domain.agents import AgentCatalog

__all__ = ["AgentDirectory"]


class AgentDirectory(Protocol):
    """Agent definitions as seen from a squad's working directory."""

    def catalog(self, cwd: str) -> AgentCatalog: ...

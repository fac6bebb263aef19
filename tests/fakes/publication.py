"""Publication over fakes only: an in-memory file system, lock factory, clock and ids, and an
agent catalog built in memory. Use cases run here exactly as the CLI runs them, minus the disk.
"""

from __future__ import annotations

from typing import Any

import attrs

from adapters.store.json_records import JsonSquadCodec
from application.squads.create_squad import PublishedSquad, Publisher, create_squad
from domain.agents import AgentCatalog, AgentDefinition, AgentSource, LoadedAgent
from tests.builders import encode, sha
from tests.fakes.machine import FakeMachine

SQUAD_ROOT = "/home/user/.pi/squad"
CWD = "/home/user/project"
AGENT_NAMES = ("architect", "backend", "docs", "qa", "reviewer")


def catalog_of(*names: str) -> AgentCatalog:
    """A catalog whose only (enabled) agents are ``names``, defined in memory."""
    return AgentCatalog.merge(
        [
            LoadedAgent(
                AgentDefinition(name=name, role=name, description=f"{name} agent", prompt="p"),
                AgentSource.BUNDLED,
                f"memory:{name}.json",
            )
            for name in sorted(names)
        ],
        [],
        [],
    )


@attrs.define
class MemoryPublication(FakeMachine):
    """Everything ``create_squad`` needs, all fake and all inspectable."""

    codec: JsonSquadCodec = attrs.field(factory=JsonSquadCodec)
    catalog: AgentCatalog = attrs.field(factory=lambda: catalog_of(*AGENT_NAMES))
    squad_root: str = SQUAD_ROOT
    cwd: str = CWD

    def __attrs_post_init__(self) -> None:
        self.fs.add_dir(self.cwd)

    @property
    def publisher(self) -> Publisher:
        return Publisher(
            fs=self.fs,
            locks=self.locks,
            clock=self.clock,
            ids=self.ids,
            codec=self.codec,
            squad_root=self.squad_root,
        )

    def write_spec(self, document: Any, name: str = "spec.json") -> tuple[str, bytes]:
        """Write ``document`` as a spec file in the working directory: (path, bytes)."""
        data = encode(document)
        return self.fs.add_file(f"{self.cwd}/{name}", data), data

    def create(
        self, data: bytes, *, spec_file: str = "spec.json", spec_sha256: str | None = None
    ) -> PublishedSquad:
        return create_squad(
            self.publisher,
            self.catalog,
            spec_file=spec_file,
            spec_sha256=spec_sha256 if spec_sha256 is not None else sha(data),
            cwd=self.cwd,
        )

    def publish(self, document: Any) -> PublishedSquad:
        _, data = self.write_spec(document)
        return self.create(data)

    def lock_path(self, staging_name: str) -> str:
        return f"{self.squad_root}/.staging-locks/{staging_name}.lock"

    def root_entries(self) -> list[str]:
        return self.fs.children(self.squad_root) if self.squad_root in self.fs.nodes else []

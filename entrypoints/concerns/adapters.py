"""The outside world behind the ports for the roles that keep squads: the system adapters,
the squad store and the agent definitions."""

from __future__ import annotations

from dependency_injector import providers

from adapters.catalogue.agent_files import FileAgentDirectory, load_agent_catalog
from adapters.catalogue.preset_files import FilePresetDirectory
from adapters.fs.witness import IdentityWitnesses
from adapters.store.json_records import JsonSquadCodec
from adapters.system.check_command import ShellCheck
from adapters.system.git_range import GitCommandRange
from adapters.system.git_worktrees import SubprocessGitWorktrees
from application.ports import Tracer
from entrypoints.concerns.reading import StoreAdapters
from entrypoints.concerns.system import SystemAdapters


class LazyOtelTraceSinks:
    """``TraceSinks`` over the OpenTelemetry adapter, imported at the first trace file: the
    SDK costs ~0.2 s to import, which only a flow that traces should pay."""

    def __init__(self, squad_root: str) -> None:
        self._squad_root = squad_root

    def open(self, path: str) -> Tracer:
        from adapters.tracing.otel import OtelTraceSinks  # noqa: PLC0415 (see the docstring)

        return OtelTraceSinks(self._squad_root).open(path)


class Adapters(StoreAdapters):
    """The system adapters, and the store and agents under the settings' squad root (tests
    override these with the fakes)."""

    settings = StoreAdapters.settings
    codec = providers.Singleton(JsonSquadCodec)
    agent_directory = providers.Singleton(FileAgentDirectory, settings.squad_root)
    # Flows also see pi-flows' agents: bundled, in Pi's agent directory and the project's
    # ``.pi/flow-agents`` (docs/flows.md, "Agent files").
    flow_agent_directory = providers.Singleton(
        FileAgentDirectory,
        settings.squad_root,
        pi_agent_dir=settings.pi_agent_dir,
        flow_agents=True,
    )
    witnesses = providers.Singleton(
        IdentityWitnesses, fs=SystemAdapters.fs, root=settings.squad_root
    )
    agent_catalog = providers.Factory(load_agent_catalog, squad_root=settings.squad_root)
    preset_directory = providers.Singleton(
        FilePresetDirectory, settings.squad_root, pi_agent_dir=settings.pi_agent_dir
    )
    trace_sinks = providers.Singleton(LazyOtelTraceSinks, settings.squad_root)
    # A flow mode's check command (evaluate's checkCommand, monitor's probe).
    flow_checks = providers.Singleton(ShellCheck)
    # What the code-review preset pins its Git range with, read-only (docs/flows.md).
    flow_git_range = providers.Singleton(GitCommandRange)
    # What the worktree mode makes its branches and worktrees with (docs/flows.md).
    flow_git_worktrees = providers.Singleton(SubprocessGitWorktrees)

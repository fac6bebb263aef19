"""Driving squads from this process: the Pi children, each squad's scheduler, the drive loop.

Two roles drive: ``pi-squad run`` and ``pi-squad demo`` in the foreground, and the main bridge,
one thread per squad the main Pi session starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dependency_injector import containers, providers

from adapters.isolation.confinement import agent_directory
from adapters.pi_rpc import PiRpcRuntime
from adapters.pi_runtime.model_files import PiModelFiles
from adapters.pi_runtime.model_registry import PiModelRegistry, script_path
from application.flows.attested import AttestedFlows
from application.flows.run_flow import FlowRunner
from application.flows.run_records import RecordedFlowRunner
from application.flows.worktree_flow import WorktreeFlow
from application.ports import ChildRuntime
from application.squads.drive import drive_squad
from application.squads.scheduler import NO_ISOLATION, Notice, Scheduler
from entrypoints.children import EXTENSION_DIR, child_runtime
from entrypoints.concerns.setting_reads import TierModels
from entrypoints.concerns.system import system_ports
from entrypoints.roles import background_driver


def scheduler_over(
    make_scheduler: Callable[..., Scheduler],
    squad_id: str,
    runtime: ChildRuntime,
    notices: Callable[[Notice], None],
    **overrides: Any,
) -> Scheduler:
    """``squad_id``'s scheduler over ``runtime``, enforcing what that runtime can confine."""
    isolation = runtime.isolation if isinstance(runtime, PiRpcRuntime) else NO_ISOLATION
    # The provider is the runtime's (``--provider``); the scheduler only fills the model.
    return make_scheduler(
        squad_id=squad_id,
        runtime=runtime,
        notices=notices,
        isolation=isolation,
        default_provider=None,
        **overrides,
    )


def model_source(
    agent_dir: str | None, environ: Mapping[str, str], tier_models: TierModels
) -> PiModelFiles:
    """The model files of the Pi agent directory the children use (``agent_dir``, else this
    process's own: ``PI_CODING_AGENT_DIR`` or ``~/.pi/agent``), for the flow model roster."""
    fast, deep = tier_models
    return PiModelFiles(agent_dir or agent_directory(environ), fast_model=fast, deep_model=deep)


def registry_model_source(runtime: PiRpcRuntime, tier_models: TierModels) -> PiModelFiles:
    """The model files of the children's agent directory, and Pi's model registry asked the
    way the children's Pi resolves it: the same Node, Pi and environment."""
    command, environ = runtime.pi_launch
    registry = PiModelRegistry(command, environ, script_path(EXTENSION_DIR))
    fast, deep = tier_models
    return PiModelFiles(agent_directory(environ), registry, fast_model=fast, deep_model=deep)


def flow_runner_over(
    make_runner: Callable[..., FlowRunner], runtime: ChildRuntime, tier_models: TierModels
) -> FlowRunner:
    """A flow runner over ``runtime``, enforcing what that runtime can confine (bash-ro); over
    Pi itself its tiers rank what Pi's registry says this install can run. ``tier_models``:
    ``PI_FLOWS_FAST_MODEL`` and ``PI_FLOWS_DEEP_MODEL`` as given."""
    if isinstance(runtime, PiRpcRuntime):
        return make_runner(
            runtime=runtime,
            isolation=runtime.isolation,
            bash_ro_allowlist=runtime.loads_extension,
            models=registry_model_source(runtime, tier_models),
        )
    return make_runner(runtime=runtime, isolation=NO_ISOLATION)


class Driver(containers.DeclarativeContainer):
    """``runtime`` starts the Pi children, ``scheduler(squad_id, runtime, notices)`` watches one
    squad's, ``drive(scheduler)`` runs it to a stop and ``background_drive(scheduler, stop)``
    does so on a thread. The root gives ``settings``, ``adapters`` and ``use_cases``."""

    settings = providers.DependenciesContainer()
    adapters = providers.DependenciesContainer()
    use_cases = providers.DependenciesContainer()

    # The Pi provider of children whose agent sets none (``--provider``).
    child_provider: providers.Provider[str | None] = providers.Object(None)
    # The children's Pi agent directory; ``None``: this process's own.
    agent_dir: providers.Provider[str | None] = providers.Object(None)
    runtime = providers.Factory(
        child_runtime,
        settings.environ,
        agent_dir=agent_dir,
        provider=child_provider,
        isolation=settings.isolation,
        runtime_override=settings.runtime_dir,
    )
    scheduler = providers.Callable(scheduler_over, use_cases.scheduler.provider)
    drive = providers.Callable(
        drive_squad,
        store=adapters.store,
        locks=adapters.locks,
    )
    background_drive = providers.Callable(background_driver, drive=drive.provider)
    # ``pi-squad flow``: one flow call over ``runtime`` (pass ``runtime=`` for another).
    flow_runner = providers.Factory(
        RecordedFlowRunner,
        journal=use_cases.flow_journal,
        runtime=runtime,
        agents=adapters.flow_agent_directory,
        checks=adapters.flow_checks,
        git_range=adapters.flow_git_range,
        worktrees=providers.Factory(
            WorktreeFlow,
            git=adapters.flow_git_worktrees,
            check=adapters.flow_checks,
            ids=adapters.ids,
        ),
        presets=adapters.preset_directory,
        **system_ports(adapters, "fs", "clock", "ids"),
        squad_root=settings.squad_root,
        # What ``runtime`` can confine (``pi-squad flow`` passes the runtime's own).
        isolation=providers.Object(NO_ISOLATION),
        # ``spec``: the brief published as a file squad, read in full by every child.
        attested=providers.Factory(
            AttestedFlows,
            publisher=use_cases.publisher,
            store=adapters.store,
            auditor=use_cases.auditor,
            locks=adapters.locks,
        ),
        trace_sinks=adapters.trace_sinks,
        trace_defaults=settings.trace_defaults,
        flow_settings=settings.flow_settings,
        models=providers.Factory(model_source, agent_dir, settings.environ, settings.tier_models),
    )
    # A runner over a new ``runtime`` with that runtime's isolation: the main role's flow tool.
    confined_flow_runner = providers.Callable(
        flow_runner_over, flow_runner.provider, runtime, settings.tier_models
    )

"""Driving squads from this process: the Pi children, each squad's scheduler, the drive loop.

Two roles drive: ``pi-squad run`` and ``pi-squad demo`` in the foreground, and the main bridge,
one thread per squad the main Pi session starts.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from dependency_injector import containers, providers

from adapters.isolation.confinement import agent_directory
from adapters.pi_rpc import PiRpcRuntime
from adapters.pi_runtime.model_files import PiModelFiles
from adapters.pi_runtime.model_registry import PiModelRegistry, script_path
from application.flows.attested import AttestedFlows
from application.flows.run_flow import FlowRunner
from application.flows.trace_setup import TraceDefaults
from application.ports import ChildRuntime
from application.squads.drive import DriveOutcome, drive_squad
from application.squads.scheduler import NO_ISOLATION, Notice, Scheduler
from domain.errors import PiSquadError
from entrypoints.children import EXTENSION_DIR, child_runtime


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


def model_source(agent_dir: str | None, environ: Mapping[str, str]) -> PiModelFiles:
    """The model files of the Pi agent directory the children use (``agent_dir``, else this
    process's own: ``PI_CODING_AGENT_DIR`` or ``~/.pi/agent``), for the flow model roster."""
    return PiModelFiles(agent_dir or agent_directory(environ), environ)


def registry_model_source(runtime: PiRpcRuntime) -> PiModelFiles:
    """The model files of the children's agent directory, and Pi's model registry asked the
    way the children's Pi resolves it: the same Node, Pi and environment."""
    command, environ = runtime.pi_launch
    registry = PiModelRegistry(command, environ, script_path(EXTENSION_DIR))
    return PiModelFiles(agent_directory(environ), environ, registry)


def flow_runner_over(make_runner: Callable[..., FlowRunner], runtime: ChildRuntime) -> FlowRunner:
    """A flow runner over ``runtime``, enforcing what that runtime can confine (bash-ro); over
    Pi itself its tiers rank what Pi's registry says this install can run."""
    if isinstance(runtime, PiRpcRuntime):
        return make_runner(
            runtime=runtime,
            isolation=runtime.isolation,
            bash_ro_allowlist=runtime.loads_extension,
            models=registry_model_source(runtime),
        )
    return make_runner(runtime=runtime, isolation=NO_ISOLATION)


def drive_until_stopped(
    scheduler: Scheduler, stop: threading.Event, *, drive: Callable[..., DriveOutcome]
) -> None:
    """A background driver's loop: it ends when ``stop`` is set; a refusal goes to stderr, as
    there is no caller left to tell."""
    try:
        drive(scheduler, should_stop=stop.is_set)
    except PiSquadError as error:
        sys.stderr.write(f"pi-squad: driver of {scheduler.squad_id}: {error}\n")


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
        child_runtime, settings.environ, agent_dir=agent_dir, provider=child_provider
    )
    scheduler = providers.Callable(scheduler_over, use_cases.scheduler.provider)
    drive = providers.Callable(
        drive_squad,
        store=adapters.store,
        locks=adapters.locks,
    )
    background_drive = providers.Callable(drive_until_stopped, drive=drive.provider)
    # ``pi-squad flow``: one flow call over ``runtime`` (pass ``runtime=`` for another).
    flow_runner = providers.Factory(
        FlowRunner,
        runtime=runtime,
        agents=adapters.agent_directory,
        presets=adapters.preset_directory,
        fs=adapters.fs,
        clock=adapters.clock,
        ids=adapters.ids,
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
        trace_defaults=providers.Callable(TraceDefaults.of, settings.environ),
        environ=settings.environ,
        models=providers.Factory(model_source, agent_dir, settings.environ),
    )
    # A runner over a new ``runtime`` with that runtime's isolation: the main role's flow tool.
    confined_flow_runner = providers.Callable(flow_runner_over, flow_runner.provider, runtime)

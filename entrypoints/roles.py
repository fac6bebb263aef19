"""Every process role pi-squad runs, each built by the one factory ``ROLES`` names for it.

A factory takes the ports its role is built over and nothing else, so the two ways of reaching
it build the same role: the containers (``container.py``, ``main_bridge_container.py``,
``bridge_container.py`` and ``concerns/``) wrap these factories in providers that tests and
bench/ override, and the bridge's process (``bridge_root.py``) calls them over the operating
system's adapters without building a container. That is the child's fast path: every child Pi
process starts a bridge and waits for its ``hello``, so its start-up is paid per task, and
``dependency_injector`` with the ``asyncio`` it imports was most of it. This module therefore
imports only what a child's bridge needs; each factory imports the rest of its role itself.

==========================  =====================================  ===========================
role                        process                                factory
==========================  =====================================  ===========================
``cli``                     ``pi-squad <command>``                 ``CliContainer``'s use
                                                                   cases (no role object)
``main-bridge``             ``pi-squad bridge --role main``        ``main_bridge``
``child-bridge``            ``pi-squad bridge --role child``       ``child_events``
``delegation-worker-bridge``  the same, in a delegated worker        ``worker_events``
``driver``                  ``run``/``demo``; a main bridge's      ``background_driver``
                            thread per squad
``delegation-workers``      ``delegate work``; a main bridge       ``dispatching_host``
                            with a grant
==========================  =====================================  ===========================
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple, Protocol

import attrs

from adapters.bridge.roles import BridgeRole, MainRoleHandler, main_bridge_role
from application.child.closed import closed_role_for
from domain.child_environment import (
    ChildEnvironment,
    DelegationWorkerChild,
    ProcessRole,
    SpecChild,
)

if TYPE_CHECKING:
    import threading

    from adapters.delegation.workers import PiWorkerRuntime
    from application.delegation.host import DelegationHost
    from application.delegation.transactions import SessionPorts
    from application.ports import (
        Clock,
        FileSystem,
        GrantSource,
        Ids,
        LockFactory,
        PiEvents,
        SessionChange,
        WorkerBroker,
    )
    from application.squads.drive import DriveOutcome
    from application.squads.scheduler import Scheduler


def process_role(environ: Mapping[str, str], fs: FileSystem) -> ProcessRole:
    """What this Pi process is, from its environment alone (contract §6)."""
    return ChildEnvironment.from_environ(environ, fs.flavour)


class ChildPorts(NamedTuple):
    """What a child's role is built over, each made only when its role needs it: a legacy or
    bash-ro child's bridge makes none, a spec child's no broker client. (A named tuple: an
    ``attrs`` class costs a child's bridge start ~0.5 ms more to define.)"""

    fs: Callable[[], FileSystem]
    locks: Callable[[], LockFactory]
    clock: Callable[[], Clock]
    ids: Callable[[], Ids]
    # A delegated worker's client of its host's evidence broker.
    worker_broker: Callable[[DelegationWorkerChild], WorkerBroker]


def child_events(role: ProcessRole, ports: ChildPorts) -> PiEvents:
    """A child's ``PiEvents``: a spec child's reader and guard, a delegated worker's broker,
    or a role with nothing to read (legacy, bash-ro, failed closed)."""
    if isinstance(role, DelegationWorkerChild):
        return worker_events(role, ports)
    if not isinstance(role, SpecChild):
        return closed_role_for(role)
    # Imported here: only a spec child pays for the reader, the ledger and the locks.
    from application.child.role import SpecChildRole  # noqa: PLC0415

    return SpecChildRole(
        role,
        fs=ports.fs(),
        locks=ports.locks(),
        clock=ports.clock(),
        ids=ports.ids(),
        read_ahead=True,  # Pi awaits each preflight: the read runs meanwhile
    )


def worker_events(worker: DelegationWorkerChild, ports: ChildPorts) -> PiEvents:
    """A delegated worker's role, asking the evidence broker its host serves (the socket its
    environment names) for the lease its environment names."""
    from application.child.worker import WorkerRole  # noqa: PLC0415

    return WorkerRole(ports.worker_broker(worker))


class HostLifecycle(Protocol):
    """The main bridge's delegation host seen from its role (``delegate_main.MainDelegation``)."""

    def host(self) -> DelegationHost: ...

    def session_change(self, change: SessionChange) -> None: ...

    def shutdown(self) -> None: ...


def main_bridge(
    make_handler: Callable[..., MainRoleHandler], delegation: HostLifecycle | None
) -> BridgeRole:
    """The main Pi's role: its handler, and with a grant the ``delegate`` host's navigation and
    shutdown (``make_handler`` is then given ``delegation``, the host's factory)."""
    if delegation is None:
        return main_bridge_role(make_handler())
    handler = make_handler(delegation=delegation.host)

    def shutdown() -> None:
        # After the navigation (``session_change``): the squads (as without delegation), then
        # any worker of this host still running killed.
        try:
            handler.session_shutdown()
        finally:
            delegation.shutdown()

    return attrs.evolve(
        main_bridge_role(handler), on_shutdown=shutdown, on_session_change=delegation.session_change
    )


def background_driver(
    scheduler: Scheduler, stop: threading.Event, *, drive: Callable[..., DriveOutcome]
) -> None:
    """A driver thread's loop: it ends when ``stop`` is set; a refusal goes to stderr, as there
    is no caller left to tell."""
    from domain.errors import PiSquadError  # noqa: PLC0415

    try:
        drive(scheduler, should_stop=stop.is_set)
    except PiSquadError as error:
        sys.stderr.write(f"pi-squad: driver of {scheduler.squad_id}: {error}\n")


class DispatchingHost(NamedTuple):
    """A delegation host that starts its jobs on real workers, and those workers."""

    host: DelegationHost
    runtime: PiWorkerRuntime


def dispatching_host(
    make_host: Callable[..., DelegationHost],
    make_ports: Callable[..., SessionPorts],
    runtime: PiWorkerRuntime,
    *,
    session: str,
    grants: GrantSource,
    cwd: str,
) -> DispatchingHost:
    """``session``'s host under ``grants``, dispatching its queued jobs to ``runtime`` (a
    process with workers is never one: ``worker_context`` keeps its default, ``False``)."""
    ports = make_ports(grants=grants, runtime=runtime)
    host = make_host(session=session, ports=ports, cwd=cwd, dispatching=True)
    runtime.bind(host)
    return DispatchingHost(host, runtime)


ROLES: Mapping[str, Callable[..., object]] = {
    "main-bridge": main_bridge,
    "child-bridge": child_events,
    "delegation-worker-bridge": worker_events,
    "driver": background_driver,
    "delegation-workers": dispatching_host,
}
"""Role name -> its factory (the ``cli`` role is ``CliContainer``'s use cases: no object)."""

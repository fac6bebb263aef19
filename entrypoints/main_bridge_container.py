"""The composition root of the main Pi's bridge (``pi-squad bridge --role main``): the squad
tools over the same services the command line uses, a driver thread per squad, and with the
user's grant the `delegate` tool's host (``entrypoints.delegate_main``).

Children inherit this process's environment (and so the main Pi's agent directory);
``PI_SQUAD_PROVIDER`` and ``PI_SQUAD_MODEL`` set their model where an agent sets none.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

from dependency_injector import providers

from adapters.bridge import BridgeRole
from application.flows.detached_flows import DETACH_AFTER_SECONDS
from application.main_role import MainRole
from application.squads.squad_drivers import SquadDrivers
from application.squads.squad_tool_calls import SquadTools
from entrypoints.container import CliContainer
from entrypoints.delegate_main import main_delegation
from entrypoints.report import write_evidence_pack
from entrypoints.roles import main_bridge

# The squad records and the use cases over them that the main role and its squad tools share.
_SQUAD_RECORDS = {
    "store": CliContainer.store,
    "status": CliContainer.status_reader,
    "operations": CliContainer.operations,
    "reviews": CliContainer.review_recorder,
}


# The shim waits this long for a tool's answer (900 s for the main role unless set).
EXECUTE_TIMEOUT_VARIABLE = "PI_SQUAD_BRIDGE_EXECUTE_TIMEOUT_MS"


def flow_detach_after(environ: Mapping[str, str]) -> float:
    """When a ``flow`` call's flow continues detached: at 14/15 of the shim's answer bound
    (read as the shim reads it: a positive integer, else the default), so the answer that
    says so arrives before the shim gives up on it."""
    text = environ.get(EXECUTE_TIMEOUT_VARIABLE, "")
    bound_ms = int(text) if text.isascii() and text.isdigit() and int(text) > 0 else None
    return DETACH_AFTER_SECONDS if bound_ms is None else bound_ms / 1000 * 14 / 15


class MainBridgeContainer(CliContainer):
    """The command line's concerns, and the main role over them."""

    cwd = providers.Callable(os.getcwd)
    # Called with ``notify``: the main session's driver threads, one per squad it drives.
    drivers = providers.Factory(
        SquadDrivers,
        store=CliContainer.store,
        make_scheduler=CliContainer.driver.scheduler.provider,
        runtime=CliContainer.driver.runtime.provider,
        drive=CliContainer.driver.background_drive.provider,
        locks=CliContainer.locks,
    )
    # Called with ``control`` and ``scheduler``: the squad tools of the main session.
    squad_tools = providers.Factory(
        SquadTools,
        cwd=cwd,
        **_SQUAD_RECORDS,
        publisher=CliContainer.publisher.provider,
        agents=CliContainer.agent_directory,
        mailbox=CliContainer.mailbox,
        runtime=CliContainer.driver.runtime.provider,
        temp_dirs=CliContainer.temp_dirs,
    )
    handler = providers.Factory(
        MainRole,
        cwd=cwd,
        flow_detach_after=providers.Callable(flow_detach_after, CliContainer.environ),
        **_SQUAD_RECORDS,
        clock=CliContainer.clock,
        make_drivers=drivers.provider,
        make_tools=squad_tools.provider,
        flows=CliContainer.driver.confined_flow_runner.provider,
        write_report=providers.Factory(
            functools.partial,
            write_evidence_pack,
            CliContainer.report_builder,
            CliContainer.fs,
            CliContainer.store,
        ),
    )
    main_delegation = providers.Callable(
        main_delegation,
        CliContainer.squad_root,
        cwd,
        grants=CliContainer.delegation.grants.provider,
        workers=CliContainer.delegation.workers.provider,
    )
    bridge_role = providers.Callable(main_bridge, handler.provider, main_delegation)


def build_main_bridge_role(environ: Mapping[str, str]) -> BridgeRole:
    """The main Pi's role for a process whose environment is ``environ``."""
    container = MainBridgeContainer()
    container.environ.override(providers.Object(environ))
    role: BridgeRole = container.bridge_role()
    return role

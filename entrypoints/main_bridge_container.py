"""The composition root of the main Pi's bridge (``pi-squad bridge --role main``): the squad
tools over the same services the command line uses, and a driver thread per squad.

Children inherit this process's environment (and so the main Pi's agent directory);
``PI_SQUAD_PROVIDER`` and ``PI_SQUAD_MODEL`` set their model where an agent sets none.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

import attrs
from dependency_injector import providers

from adapters.bridge import BridgeRole, main_bridge_role
from application.main_role import MainRole
from entrypoints.container import CliContainer
from entrypoints.delegate_main import main_delegation
from entrypoints.report import write_evidence_pack


class MainBridgeContainer(CliContainer):
    """The command line's concerns, and the main role over them."""

    cwd = providers.Callable(os.getcwd)
    handler = providers.Factory(
        MainRole,
        cwd=cwd,
        store=CliContainer.store,
        locks=CliContainer.locks,
        publisher=CliContainer.publisher.provider,
        agents=CliContainer.agent_directory,
        operations=CliContainer.operations,
        reviews=CliContainer.review_recorder,
        mailbox=CliContainer.mailbox,
        status=CliContainer.status_reader,
        make_scheduler=CliContainer.driver.scheduler.provider,
        runtime=CliContainer.driver.runtime.provider,
        drive=CliContainer.driver.background_drive.provider,
        temp_dirs=CliContainer.temp_dirs,
        flows=CliContainer.driver.confined_flow_runner.provider,
        write_report=providers.Factory(
            functools.partial,
            write_evidence_pack,
            CliContainer.report_builder,
            CliContainer.fs,
            CliContainer.store,
        ),
    )
    bridge_role = providers.Factory(main_bridge_role, handler)


def build_main_bridge_role(environ: Mapping[str, str]) -> BridgeRole:
    """The main Pi's role for a process whose environment is ``environ``."""
    container = MainBridgeContainer()
    container.environ.override(providers.Object(environ))
    delegation = main_delegation(container, container.cwd())
    if delegation is None:
        role: BridgeRole = container.bridge_role()
        return role
    handler = container.handler(delegation=delegation.host)

    def shutdown() -> None:
        # After the navigation (``session_change``): the squads (as without delegation), then
        # any worker of this host still running killed.
        try:
            handler.session_shutdown()
        finally:
            delegation.shutdown()

    return attrs.evolve(
        main_bridge_role(handler),
        on_shutdown=shutdown,
        on_session_change=delegation.session_change,
    )

"""The application's use cases over the adapters."""

from __future__ import annotations

from typing import Any

from dependency_injector import providers

from application.squads.create_squad import Publisher
from application.squads.mailbox import Mailbox
from application.squads.operations import SquadOperations
from application.squads.report import ReportBuilder
from application.squads.review import ReviewRecorder
from application.squads.scheduler import Scheduler
from entrypoints.concerns.reading import ReadingUseCases, audited
from entrypoints.concerns.system import system_ports


def _policy(settings: providers.DependenciesContainer) -> dict[str, providers.Provider[Any]]:
    """What the settings tell every squad's scheduler: the children's model where an agent sets
    none, whether a child must be confined, the monitor's thresholds and its advisor."""
    return {
        "default_provider": settings.default_provider,
        "default_model": settings.default_model,
        "require_isolation": settings.require_isolation,
        "monitor_policy": settings.monitor_policy,
        "advisor": settings.advisor,
    }


class UseCases(ReadingUseCases):
    """One provider per use case (those that read a squad from ``ReadingUseCases``);
    ``settings`` and ``adapters`` are given by the root."""

    settings = providers.DependenciesContainer()
    adapters = ReadingUseCases.adapters
    auditor = ReadingUseCases.auditor
    publisher = providers.Factory(
        Publisher, codec=adapters.codec, squad_root=settings.squad_root, **system_ports(adapters)
    )
    operations = providers.Factory(
        SquadOperations,
        agents=adapters.agent_directory,
        ids=adapters.ids,
        **audited(adapters, auditor),
    )
    review_recorder = providers.Factory(
        ReviewRecorder, ids=adapters.ids, **audited(adapters, auditor)
    )
    mailbox = providers.Factory(
        Mailbox, store=adapters.store, clock=adapters.clock, ids=adapters.ids
    )
    report_builder = providers.Factory(ReportBuilder, **audited(adapters, auditor))
    # One squad's scheduler; the caller gives ``squad_id``, ``runtime``, ``notices`` and
    # ``isolation`` (what that runtime enforces).
    scheduler = providers.Factory(
        Scheduler,
        agents=adapters.agent_directory,
        ids=adapters.ids,
        **_policy(settings),
        temp_dirs=adapters.temp_dirs,
        witnesses=adapters.witnesses,
        **audited(adapters, auditor),
    )

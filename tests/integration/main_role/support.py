"""The main role built from the main bridge's composition root over a test world, shared by the
main-role test modules (commands, live view, ownership): one place that says which providers a
test world overrides, so the modules cannot drift apart."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dependency_injector import providers

from application.main_role import MainRole
from application.ports import SessionNotification
from application.squads.scheduler import Scheduler
from entrypoints.main_bridge_container import MainBridgeContainer
from tests.runtime_world import RuntimeWorld
from tests.support.containers import override_system


class RecordingDrive:
    """Stands in for a driver thread's loop: records which squads it drove, until stopped."""

    def __init__(self) -> None:
        self.driven: list[str] = []

    def __call__(self, scheduler: Scheduler, stop: threading.Event) -> None:
        self.driven.append(scheduler.squad_id)
        stop.wait(30)


@contextmanager
def main_role_over(world: RuntimeWorld, drive: RecordingDrive) -> Iterator[MainRole]:
    """The main role over ``world`` whose background drives are recorded by ``drive``; the
    session is shut down and detached on exit."""
    container = MainBridgeContainer()
    override_system(container, {"PI_SQUAD_ROOT": world.root}, world)
    container.temp_dirs.override(providers.Object(world.temp_dirs))
    container.store.override(providers.Object(world.store))
    container.cwd.override(providers.Object(world.cwd))
    container.driver.runtime.override(providers.Object(world.runtime))
    container.driver.background_drive.override(providers.Callable(drive))
    built: MainRole = container.handler(view_interval=0.0)
    try:
        yield built
    finally:
        built.session_shutdown()
        built.detach()


def ui_events(emitted: list[SessionNotification]) -> list[dict[str, Any]]:
    return [dict(n.data) for n in emitted if n.event == "ui"]


def notices(emitted: list[SessionNotification]) -> list[dict[str, Any]]:
    return [e for e in ui_events(emitted) if e["method"] == "notify"]

"""The scripted handlers of a test and the bridge server serving them over real pipes, closed at
teardown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters.bridge import main_bridge_role
from tests.integration.bridge_server.support import ScriptedEvents, Served


@pytest.fixture
def events() -> ScriptedEvents:
    return ScriptedEvents()


@pytest.fixture
def served(events: ScriptedEvents) -> Iterator[Served]:
    serving = Served(main_bridge_role(events))
    yield serving
    events.release.set()
    if not serving.input.closed:
        serving.finish()

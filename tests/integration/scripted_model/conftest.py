"""A running scripted model server whose default policy is ``echo``, stopped at teardown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters.scripted_model import ScriptedModelServer


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer("echo") as running:
        yield running

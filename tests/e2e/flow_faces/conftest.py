"""The world of the flow-face tests: a main Pi's project and models on a ``diligent`` scripted
model (tests/e2e/flow_faces/support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from tests.e2e.flow_faces.support import FacesWorld


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[FacesWorld]:
    with ScriptedModelServer("diligent") as model:
        built = FacesWorld(base=tmp_path, runtime=runtime, model=model)
        built.project.mkdir()
        built.write_models()
        yield built

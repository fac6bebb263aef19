"""A published squad and a launcher of real Pi runs over it, each run stopped at teardown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model.policies import IMPATIENT_READ_MARKER
from tests.e2e.child_extension.support import SECRET, SPEC, Launcher, Squad
from tests.squads import publish_on_disk


@pytest.fixture
def squad(tmp_path: Path) -> Squad:
    published = publish_on_disk(tmp_path, SPEC)
    project = tmp_path / "project"
    (project / IMPATIENT_READ_MARKER).write_text(SECRET)
    return Squad(published=published, workdir=project)


@pytest.fixture
def launcher(runtime: PiRuntime, tmp_path: Path) -> Iterator[Launcher]:
    launch = Launcher(runtime=runtime, base=tmp_path)
    yield launch
    for client in launch.started:
        if client.process.poll() is None:
            client.close()

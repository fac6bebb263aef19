"""Each child-side contract row runs twice: on pyfakefs with fake locks, and on ``tmp_path``
with real ``fasteners`` locks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyfakefs.fake_filesystem import FakeFilesystem

from adapters.catalogue.agent_files import BUNDLED_AGENTS_DIR
from adapters.store.lock import FastenersLockFactory
from application.ports import FileSystem, LockFactory
from tests.contract._fs_worlds import emulated_posix_file_system, refuse_kernel_calls
from tests.contract.child_attestation.world import SCHEMAS_DIR, SPEC, ChildWorld
from tests.fakes.clock import FakeClock
from tests.fakes.locks import FakeLockFactory
from tests.host_fs import host_file_system
from tests.squads import publish


@pytest.fixture(params=["fake", "real"])
def world(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> ChildWorld:
    if request.param == "fake":
        fake: FakeFilesystem = request.getfixturevalue("fs")
        fake.add_real_directory(BUNDLED_AGENTS_DIR)
        fake.add_real_directory(SCHEMAS_DIR)
        refuse_kernel_calls(monkeypatch)
        base = "/work-fake"
        locks: LockFactory = FakeLockFactory()
        fs: FileSystem = emulated_posix_file_system()
    else:
        base = str(tmp_path)
        locks = FastenersLockFactory()
        fs = host_file_system()
    os.makedirs(f"{base}/project", exist_ok=True)
    with open(f"{base}/project/squad-spec.json", "wb") as handle:
        handle.write(SPEC)
    clock = FakeClock()
    published = publish(fs, f"{base}/root", SPEC, cwd=f"{base}/project", locks=locks, clock=clock)
    return ChildWorld(
        fs=fs, locks=locks, clock=clock, published=published, emulated=request.param == "fake"
    )

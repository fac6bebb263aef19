"""The user's and the project's agent directories of a test, both under its ``tmp_path``."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.catalogue.agent_files import project_agents_dir, user_agents_dir


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return Path(user_agents_dir(str(tmp_path / "root")))


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    return Path(project_agents_dir(str(tmp_path / "repo")))

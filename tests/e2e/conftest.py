"""Fixtures of the real-Pi end-to-end tests."""

from __future__ import annotations

import pytest

from adapters.pi_runtime import PiRuntime
from tests.pi_runtime_support import installed_pi_runtime


@pytest.fixture(scope="module")
def runtime() -> PiRuntime:
    """The installed Pi runtime; the test is skipped when there is none."""
    return installed_pi_runtime()

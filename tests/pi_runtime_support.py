"""The real Pi 0.80.10 runtime for the tests that need it, or a skip that says what to run."""

from __future__ import annotations

import os

import pytest

from adapters.pi_runtime import PiRuntime, PiRuntimeUnavailable, locate_runtime
from entrypoints.concerns.setting_reads import runtime_dir


def installed_pi_runtime() -> PiRuntime:
    """The project-local runtime (``make runtime``); skips the calling test when it is absent."""
    try:
        return locate_runtime(None, os.environ, runtime_override=runtime_dir(os.environ))
    except PiRuntimeUnavailable as error:
        pytest.skip(f"real Pi runtime not installed (run `make runtime`): {error}")

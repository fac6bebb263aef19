"""How this process starts child Pi processes: the runtime, the bridge, the environment."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from adapters.isolation.landlock import IsolationSetting, select_isolation
from adapters.pi_rpc import PiRpcRuntime
from adapters.pi_runtime import (
    PiRuntime,
    PiRuntimeUnavailable,
    locate_runtime,
    pi_command,
    pi_environment,
)
from domain.errors import ErrorCode, SquadOperationError

EXTENSION_DIR = str(Path(__file__).resolve().parent / "pi")


def bridge_command() -> list[str]:
    """The exact Python that runs this command also runs every child's bridge. ``-P``: a child
    starts its bridge in the project directory, which ``-m`` alone would put first on
    ``sys.path``, where a project's own ``domain/`` or a child-written ``entrypoints/bridge.py``
    would be imported instead of ours."""
    return [sys.executable, "-P", "-m", "entrypoints.bridge"]


def located_runtime(environ: Mapping[str, str], runtime_override: str | None) -> PiRuntime:
    """Pi 0.80.10 and its Node (in ``PI_SQUAD_RUNTIME_DIR``, ``runtime_override``, else the
    checkout's runtime, else on ``PATH``), or ``RUNTIME_UNAVAILABLE`` saying what was found."""
    try:
        return locate_runtime(None, environ, runtime_override=runtime_override)
    except PiRuntimeUnavailable as exc:
        raise SquadOperationError(
            ErrorCode.RUNTIME_UNAVAILABLE,
            f"no usable Pi 0.80.10: {'; '.join(exc.found) or 'nothing found'}; run `make runtime`",
        ) from None


def child_runtime(
    environ: Mapping[str, str],
    *,
    agent_dir: str | None,
    provider: str | None,
    isolation: IsolationSetting,
    runtime_override: str | None,
) -> PiRpcRuntime:
    """Children started from ``environ``, confined as ``isolation`` (``PI_SQUAD_ISOLATION``)
    says, by the runtime ``runtime_override`` (``PI_SQUAD_RUNTIME_DIR``) or the search finds."""
    runtime = located_runtime(environ, runtime_override)
    if agent_dir is not None:
        base = pi_environment(environ, agent_dir, runtime)
    else:
        base = dict(environ)
        node_bin = str(Path(runtime.node_path).parent)
        base["PATH"] = os.pathsep.join([node_bin, base.get("PATH", "")])
    base["PI_SQUAD_BRIDGE"] = json.dumps(bridge_command())
    return PiRpcRuntime(
        pi_command(runtime),
        base,
        EXTENSION_DIR,
        provider=provider,
        isolation=select_isolation(isolation, environ),
        runtime_override=runtime_override,
    )

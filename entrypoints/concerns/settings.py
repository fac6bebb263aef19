"""What a process was told: its environment and what follows from it."""

from __future__ import annotations

import os
from collections.abc import Mapping

from dependency_injector import containers, providers

from adapters.store.squad_root import resolve_squad_root
from domain.squad.advisor import advisor_from_environment
from domain.squad.monitor import policy_from_environment

REQUIRE_ISOLATION_VARIABLE = "PI_SQUAD_REQUIRE_ISOLATION"


def isolation_required(environ: Mapping[str, str], flag: bool = False) -> bool:
    """``--require-isolation`` or ``PI_SQUAD_REQUIRE_ISOLATION=1``: never start an unconfined
    child."""
    return flag or environ.get(REQUIRE_ISOLATION_VARIABLE, "").strip() in {"1", "true", "yes"}


def _variable(environ: Mapping[str, str], name: str) -> str | None:
    return environ.get(name) or None


class Settings(containers.DeclarativeContainer):
    """The environment (override ``environ`` to run against another) and the values read from
    it lazily, when a provider is first called."""

    environ = providers.Object(os.environ)
    squad_root = providers.Callable(resolve_squad_root, environ)
    default_provider = providers.Callable(_variable, environ, "PI_SQUAD_PROVIDER")
    default_model = providers.Callable(_variable, environ, "PI_SQUAD_MODEL")
    require_isolation = providers.Callable(isolation_required, environ)
    monitor_policy = providers.Callable(policy_from_environment, environ)
    # ``PI_SQUAD_ADVISOR_MODEL``: the monitor's advisor for escalations; unset, none.
    advisor = providers.Callable(advisor_from_environment, environ)

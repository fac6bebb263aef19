"""Reading the ``PI_SQUAD_*`` and ``PI_FLOWS_*`` settings from an environment: as text, as
given, or as the switch or path one is. Nothing else in pi-squad reads one: ``Settings`` (the
container, ``settings.py``) calls these for each setting and builds the values the adapters and
use cases are given; a value that can be malformed is parsed where it is used, so a bad one
fails only what uses it.

Nothing heavy is imported (the standard library; the child contract's names only where a
setting needs them): the child's bridge (``entrypoints/bridge_root.py``) reads its squad root
here on its fast path, without the container, and ``pi-squad status`` without the child
contract's model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# The settings no other module names; the others' names are their users' (``Settings``
# imports them from there).
SQUAD_ROOT_VARIABLE = "PI_SQUAD_ROOT"
PROVIDER_VARIABLE = "PI_SQUAD_PROVIDER"
MODEL_VARIABLE = "PI_SQUAD_MODEL"
REQUIRE_ISOLATION_VARIABLE = "PI_SQUAD_REQUIRE_ISOLATION"
RUNTIME_DIR_VARIABLE = "PI_SQUAD_RUNTIME_DIR"
TRACE_STRICT_VARIABLE = "PI_FLOWS_TRACE_STRICT"
_ON = frozenset({"1", "true", "yes"})
# ``PI_FLOWS_FAST_MODEL`` and ``PI_FLOWS_DEEP_MODEL`` as given (``None``: unset).
TierModels = tuple[str | None, str | None]


def text(environ: Mapping[str, str], name: str) -> str:
    """The setting as given, stripped; unset is empty."""
    return environ.get(name, "").strip()


def optional(environ: Mapping[str, str], name: str) -> str | None:
    """The setting as given; unset or empty is ``None``."""
    return environ.get(name) or None


def home_directory(environ: Mapping[str, str]) -> str:
    """``HOME`` as ``environ`` gives it, else this user's (the password database's)."""
    return environ.get("HOME") or os.path.expanduser("~")


def squad_root(environ: Mapping[str, str]) -> str:
    """The absolute squad root: ``PI_SQUAD_ROOT`` when set and non-empty (a relative one is
    taken from the working directory), otherwise ``<home>/.pi/squad``."""
    override = environ.get(SQUAD_ROOT_VARIABLE, "")
    root = override or os.path.join(home_directory(environ), ".pi", "squad")
    return os.path.abspath(root)


def runtime_dir(environ: Mapping[str, str]) -> str | None:
    """``PI_SQUAD_RUNTIME_DIR``: where the Pi runtime is, instead of the checkout's."""
    return optional(environ, RUNTIME_DIR_VARIABLE)


def isolation_required(environ: Mapping[str, str]) -> bool:
    """``PI_SQUAD_REQUIRE_ISOLATION=1`` (or ``true``, ``yes``): never start an unconfined
    child (``--require-isolation`` says the same for one command)."""
    return text(environ, REQUIRE_ISOLATION_VARIABLE) in _ON


def trace_strict(environ: Mapping[str, str]) -> bool:
    """``PI_FLOWS_TRACE_STRICT=1`` (or ``true``, ``yes``, in any case)."""
    return text(environ, TRACE_STRICT_VARIABLE).lower() in _ON


def in_worker_context(environ: Mapping[str, str]) -> bool:
    """Whether this process is a delegated worker or a squad's or flow's child: it runs no
    workers and its `delegate` requests are refused as recursive."""
    from domain.child_environment import CHILD_FLAG, DELEGATION_WORKER  # noqa: PLC0415 (above)

    return any(environ.get(name) == "1" for name in (DELEGATION_WORKER, CHILD_FLAG))


def tier_models(environ: Mapping[str, str], names: Mapping[str, str]) -> TierModels:
    """The flow roster's ``fast`` and ``deep`` overrides (``names``: each tier's variable) as
    given (an empty one is kept: the roster ignores it)."""
    return environ.get(names["fast"]), environ.get(names["deep"])

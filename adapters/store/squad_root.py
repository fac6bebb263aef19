"""Where pi-squad keeps its per-user state: ``$PI_SQUAD_ROOT``, else ``~/.pi/squad``.

The composition roots resolve the root here, once, and hand it to the use cases, which never
look at the environment or the home directory themselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

SQUAD_ROOT_ENV = "PI_SQUAD_ROOT"


def squad_root(environ: Mapping[str, str], home: str) -> str:
    """``environ["PI_SQUAD_ROOT"]`` when set and non-empty, otherwise ``<home>/.pi/squad``.

    The override is returned as given (a relative value stays relative to the caller's working
    directory); an empty value counts as unset, as it does for upstream's ``||`` fallback.
    """
    override = environ.get(SQUAD_ROOT_ENV, "")
    if override:
        return override
    return os.path.join(home, ".pi", "squad")


def resolve_squad_root(environ: Mapping[str, str]) -> str:
    """The absolute squad root for ``environ`` and this user's home directory."""
    return os.path.abspath(squad_root(environ, os.path.expanduser("~")))

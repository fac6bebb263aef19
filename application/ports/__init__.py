"""The ports: small protocols the use cases depend on. Adapters implement them explicitly.

One module per concern, each naming its ports in ``__all__``: the file system; the clock, ids,
temporary directories and locks (``system``); the squad store; the Pi extension host
(``pi_events``); child Pi processes (``children``); agent definitions; child write isolation;
flow trace export (``tracing``).
All of them are re-exported here, so ``from application.ports import X`` is the way to use them.

Loaded on first use, not eagerly: every child Pi process starts a bridge, and a child needs only
the file system, system and Pi-event ports. Importing ``store`` (and through it the squad model
and the attestation records) eagerly cost a child's bridge ~45 ms of its start-up (measured with
``python -X importtime``, ``bench.child_start``). Each module's ``__all__`` stays the one list of
its names: a name is looked up in the modules below, cheapest first, and kept once found.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # What type checkers see: every port, exactly as an eager import would give it.
    from application.ports.agents import *  # noqa: F403
    from application.ports.broker import *  # noqa: F403
    from application.ports.children import *  # noqa: F403
    from application.ports.delegation import *  # noqa: F403
    from application.ports.filesystem import *  # noqa: F403
    from application.ports.flow_runs import *  # noqa: F403
    from application.ports.git_range import *  # noqa: F403
    from application.ports.git_worktrees import *  # noqa: F403
    from application.ports.isolation import *  # noqa: F403
    from application.ports.pi_events import *  # noqa: F403
    from application.ports.store import *  # noqa: F403
    from application.ports.system import *  # noqa: F403
    from application.ports.tracing import *  # noqa: F403
    from application.ports.witness import *  # noqa: F403

# Cheapest first: a child's names are all found before ``store`` would be imported.
_MODULES = (
    "pi_events",
    "system",
    "filesystem",
    "children",
    "isolation",
    "agents",
    "tracing",
    "broker",
    "store",
    "delegation",
    "witness",
    "flow_runs",
    "git_worktrees",
    "git_range",
)

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        # A module already loaded answers first: a process that imported the ports it uses
        # (``entrypoints/concerns/reading.py`` does) imports none listed before them.
        loaded = [m for m in _MODULES if f"{__name__}.{m}" in sys.modules]
        for module_name in (*loaded, *_MODULES):
            module = importlib.import_module(f"{__name__}.{module_name}")
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value
                return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        names = set(globals())
        for module_name in _MODULES:
            names.update(importlib.import_module(f"{__name__}.{module_name}").__all__)
        return sorted(names)

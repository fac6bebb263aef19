"""Which isolation layers held for a child, and for every child of a squad (docs/architecture.md,
"Trust boundary").

A child can run under two layers: its own PID and IPC namespaces without capabilities
(bubblewrap, ``namespaces``) and Landlock write isolation at some ABI (``landlock``). From
Landlock ABI 6 the ruleset also scopes signals and abstract UNIX sockets to the child's own
domain (``scoped``). A squad's record keeps the *meet* of its children's levels: each layer only
if it held for every child, the lowest ABI any child ran under. Its label names those layers,
e.g. ``namespaces+landlock(ABI 7, scoped)``, ``landlock(ABI 4, unscoped signals)``, ``none``.

A level "stops signal attacks" when a child cannot signal a sibling's processes (stop it, or
make a Node process open its inspector with SIGUSR1 and evaluate code in it): either the child
has its own PID namespace, or Landlock scopes its signals.
"""

from __future__ import annotations

import re

import attrs

SCOPED_ABI = 6
"""The first Landlock ABI that scopes signals and abstract UNIX sockets (Linux 6.12)."""
MINIMUM_LANDLOCK_ABI = 3
"""Below it (Linux < 6.2) Landlock cannot deny ``truncate(2)`` and pi-squad confines nothing."""

_LABEL = re.compile(
    r"^(?P<ns>namespaces)?(?:\+?landlock\(ABI (?P<abi>[0-9]{1,3}), "
    r"(?P<scope>scoped|unscoped signals)\))?$"
)


@attrs.frozen
class IsolationLevel:
    """The layers one child ran under (or, as a meet, every child of a squad)."""

    namespaces: bool = False
    landlock_abi: int | None = None

    @property
    def scoped(self) -> bool:
        """Landlock scoped the child's signals and abstract UNIX sockets."""
        return self.landlock_abi is not None and self.landlock_abi >= SCOPED_ABI

    @property
    def stops_signals(self) -> bool:
        """A child at this level cannot signal a sibling's processes."""
        return self.namespaces or self.scoped

    @property
    def label(self) -> str:
        landlock = (
            None
            if self.landlock_abi is None
            else f"landlock(ABI {self.landlock_abi}, "
            + ("scoped)" if self.scoped else "unscoped signals)")
        )
        layers = [name for name in ("namespaces" if self.namespaces else None, landlock) if name]
        return "+".join(layers) if layers else "none"

    def meet(self, other: IsolationLevel) -> IsolationLevel:
        """What held for both: a layer only if both had it, the lower Landlock ABI."""
        abi = (
            None
            if self.landlock_abi is None or other.landlock_abi is None
            else min(self.landlock_abi, other.landlock_abi)
        )
        return IsolationLevel(namespaces=self.namespaces and other.namespaces, landlock_abi=abi)


def parse_level(label: str) -> IsolationLevel | None:
    """The level a :attr:`IsolationLevel.label` names; ``None`` for anything else."""
    if label == "none":
        return IsolationLevel()
    match = _LABEL.match(label)
    if match is None or not (match["ns"] or match["abi"]):
        return None
    level = IsolationLevel(
        namespaces=match["ns"] is not None,
        landlock_abi=None if match["abi"] is None else int(match["abi"]),
    )
    return level if level.label == label else None


def layers_after_spawn(
    recorded_mode: str | None, recorded_layers: str | None, level: IsolationLevel
) -> str | None:
    """A squad's recorded layers once one more child starts at ``level``: the meet with what
    every earlier child had. A squad whose earlier children ran before layers were recorded
    (a mode but no layers) keeps none: what held for them is unknown."""
    if recorded_mode is None:
        return level.label
    if recorded_layers is None:
        return None
    earlier = parse_level(recorded_layers)
    if earlier is None:
        return None
    return earlier.meet(level).label


def signal_isolation_problem(level: IsolationLevel) -> str | None:
    """Why a child at ``level`` could signal a sibling (``--require-isolation`` refuses it), or
    ``None``. Landlock below ABI 6 does not scope signals; only a PID namespace covers it."""
    if level.stops_signals or level.landlock_abi is None:
        return None
    return (
        f"{level.label}: Landlock ABI {level.landlock_abi} cannot scope signals and children "
        "get no PID namespace of their own, so a child could signal a sibling's processes "
        "(stop them, or open a Node inspector with SIGUSR1); install bubblewrap "
        "(apt-get install bubblewrap, or dnf install bubblewrap) so that each child runs in "
        f"its own PID namespace, or run on Linux >= 6.12 (Landlock ABI {SCOPED_ABI})"
    )


def layers_statement(mode: str | None, layers: str | None) -> str | None:
    """What the recorded ``layers`` held for every child, in words, for the isolation
    statement; ``None`` before any child ran."""
    if mode is None:
        return None
    level = None if layers is None else parse_level(layers)
    if level is None:
        return (
            "the layers each child ran under were not recorded (children that started before "
            "pi-squad recorded them): assume no PID namespace and no signal scoping"
        )
    parts: list[str] = []
    if level.namespaces:
        parts.append(
            "each child ran in its own PID and IPC namespaces without capabilities, so it "
            "could not see or signal processes outside its own tree, could not make device "
            "nodes, and its whole tree ended with its task"
        )
    if level.landlock_abi is not None:
        parts.append(
            f"Landlock ABI {level.landlock_abi} "
            + (
                "also scoped signals and abstract UNIX sockets to each child's own tree"
                if level.scoped
                else "could not scope signals or abstract UNIX sockets"
            )
        )
    if not level.stops_signals:
        parts.append(
            "a child could signal processes outside its own tree, a sibling's included"
            if level.landlock_abi is not None or level.namespaces
            else "children were not isolated from each other's processes"
        )
    return f"layers that held for every child: {level.label}" + (
        f" ({'; '.join(parts)})" if parts else ""
    )

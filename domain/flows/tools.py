"""A role's tools as a call states them: ``default`` (Pi's defaults), ``none``, or names
(comma-separated or a list), ``bash-ro`` included."""

from __future__ import annotations

import attrs

from domain.errors import ErrorCode
from domain.flows.errors import refuse
from domain.input_errors import InvalidField

BASH_RO = "bash-ro"
# What makes a role write-capable (pi-flows: Pi's defaults, or any of these).
WRITE_TOOLS = frozenset({"bash", "edit", "write"})


@attrs.frozen
class ToolChoice:
    """``names is None``: Pi's defaults (no ``--tools``); ``()``: no tools at all."""

    names: tuple[str, ...] | None

    @classmethod
    def of(cls, value: object) -> ToolChoice:
        """From the schema-checked JSON value (a string or a list of names)."""
        if isinstance(value, str):
            parts = tuple(part.strip() for part in value.split(","))
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            parts = tuple(value)
            if not parts:
                return cls(())
        else:
            raise InvalidField("tools", "must be a string or a list of tool names")
        if parts == ("default",):
            return cls(None)
        if parts == ("none",):
            return cls(())
        if "default" in parts or "none" in parts:
            raise InvalidField("tools", "default and none stand alone, never beside tool names")
        if len(set(parts)) != len(parts):
            raise InvalidField("tools", "names a tool twice")
        # pi-flows: a toolset with both bash and bash-ro is plain bash (write-capable).
        if BASH_RO in parts and "bash" in parts:
            parts = tuple(part for part in parts if part != BASH_RO)
        return cls(parts)

    @property
    def read_only_bash(self) -> bool:
        return self.names is not None and BASH_RO in self.names

    def child_tools(self) -> tuple[str, ...] | None:
        """What the child's ``--tools`` gets: ``bash-ro`` is ``bash`` under a read-only kernel
        boundary (the dispatcher confines the child)."""
        if self.names is None:
            return None
        return tuple("bash" if name == BASH_RO else name for name in self.names)

    def write_tools(self) -> tuple[str, ...]:
        """The tools that make this choice write-capable (``("default",)`` for Pi's defaults)."""
        if self.names is None:
            return ("default",)
        return tuple(name for name in self.names if name in WRITE_TOOLS)

    def describe(self) -> str:
        if self.names is None:
            return "default"
        return ",".join(self.names) if self.names else "none"


NO_SANDBOX_VARIABLE = "PI_FLOWS_BASH_RO_NO_SANDBOX"
REQUIRE_SANDBOX_VARIABLE = "PI_FLOWS_BASH_RO_REQUIRE_SANDBOX"


@attrs.frozen
class BashRoSwitches:
    """pi-flows' switches: ``no_sandbox`` runs bash-ro children without the kernel sandbox
    (the allowlist alone); ``require_sandbox`` refuses bash-ro where the sandbox is missing
    rather than falling back to the allowlist."""

    no_sandbox: bool = False
    require_sandbox: bool = False


NO_SWITCHES = BashRoSwitches()


def bash_ro_switches(no_sandbox: str, require_sandbox: str) -> BashRoSwitches:
    """The switches as the two settings give them: ``1`` on, empty or ``0`` off; any other
    value is refused, naming the variable (the first one's first)."""
    return BashRoSwitches(
        _switch(NO_SANDBOX_VARIABLE, no_sandbox), _switch(REQUIRE_SANDBOX_VARIABLE, require_sandbox)
    )


def _switch(name: str, setting: str) -> bool:
    raw = setting.strip()
    if raw not in ("", "0", "1"):
        raise refuse(
            ErrorCode.FLOW_INVALID,
            f"env.{name}",
            f"{name} must be 1 (on) or 0 (off)",
            measured=raw[:100],
            allowed=["0", "1"],
        )
    return raw == "1"


def bash_ro_enforcement(
    *, kernel: bool, allowlist: bool, switches: BashRoSwitches = NO_SWITCHES
) -> str | None:
    """How ``bash-ro`` is enforced given what this host offers: the ``kernel`` sandbox
    (Landlock, unless switched off) and/or the in-child ``allowlist`` (the child loads
    pi-squad's extension); ``None`` when neither can, or when the sandbox is required and
    missing (``BASH_READONLY_UNENFORCEABLE``)."""
    sandbox = kernel and not switches.no_sandbox
    if switches.require_sandbox and not sandbox:
        return None
    layers = [name for name, present in (("sandbox", sandbox), ("allowlist", allowlist)) if present]
    return "+".join(layers) or None

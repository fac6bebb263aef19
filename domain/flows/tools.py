"""A role's tools as a call states them: ``default`` (Pi's defaults), ``none``, or names
(comma-separated or a list), ``bash-ro`` included."""

from __future__ import annotations

import attrs

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


def bash_ro_enforcement(*, sandbox: bool, allowlist: bool) -> str | None:
    """How ``bash-ro`` is enforced given what this host offers: the kernel ``sandbox``
    (Landlock) and/or the in-child ``allowlist`` (the child loads pi-squad's extension);
    ``None`` when neither can (``BASH_READONLY_UNENFORCEABLE``)."""
    layers = [name for name, present in (("sandbox", sandbox), ("allowlist", allowlist)) if present]
    return "+".join(layers) or None

"""Child write isolation: what the machine can enforce, and how a child's argv is confined."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

__all__ = ["ChildIsolation", "IsolationSupport"]


@attrs.frozen
class IsolationSupport:
    """What this machine can enforce on child processes."""

    mode: str = attrs.field(validator=attrs.validators.in_(("landlock", "none")))
    """``"landlock"`` (kernel-enforced) or ``"none"``."""
    abi: int | None
    """The Landlock ABI version when ``mode == "landlock"``, else ``None``."""
    reason: str | None
    """Why ``mode == "none"`` (not Linux, kernel too old, disabled by a setting, ...)."""

    def __attrs_post_init__(self) -> None:
        consistent = (
            self.abi is not None and self.reason is None
            if self.mode == "landlock"
            else self.abi is None and bool(self.reason)
        )
        if not consistent:
            raise ValueError("mode landlock has an ABI and no reason; mode none a reason, no ABI")


class ChildIsolation(Protocol):
    def support(self) -> IsolationSupport: ...

    def confine(self, argv: Sequence[str], *, writable: Sequence[str]) -> list[str]:
        """argv that runs ``argv`` so that it and every descendant can write only beneath
        ``writable`` (absolute directories; an absolute non-directory such as ``/dev/null``
        grants writing that one file). Same process (exec), environment and descriptors:
        already-open descriptors stay writable. Raises ``domain.errors.IsolationUnavailable``
        if ``support().mode != "landlock"``, ``ValueError`` for an empty ``argv`` or a
        relative path."""
        ...

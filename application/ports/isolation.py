"""Child isolation: what the machine can enforce, and how a child's argv is confined (Landlock
write isolation) and enclosed (its own process namespaces)."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Protocol

import attrs

from domain.isolation_level import IsolationLevel

__all__ = ["ChildIsolation", "IsolationSupport", "check_confine_arguments"]


@attrs.frozen
class IsolationSupport:
    """What this machine can enforce on child processes."""

    mode: str = attrs.field(validator=attrs.validators.in_(("landlock", "none")))
    """``"landlock"`` (kernel-enforced) or ``"none"``."""
    abi: int | None
    """The Landlock ABI version when ``mode == "landlock"``, else ``None``."""
    reason: str | None
    """Why ``mode == "none"`` (not Linux, kernel too old, disabled by a setting, ...)."""
    namespaces: bool = False
    """Every child runs in its own PID and IPC namespaces without capabilities (bubblewrap),
    whatever ``mode`` says of write isolation."""
    namespaces_reason: str | None = None
    """Why ``namespaces`` is false (bubblewrap missing, refused by the kernel, disabled)."""

    @property
    def level(self) -> IsolationLevel:
        """The layers a child started under this support runs in when it is confined."""
        return IsolationLevel(
            namespaces=self.namespaces, landlock_abi=self.abi if self.mode == "landlock" else None
        )

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

    def confine(
        self,
        argv: Sequence[str],
        *,
        writable: Sequence[str],
        read_only: Sequence[str] = (),
        readable: Sequence[str] | None = None,
    ) -> list[str]:
        """argv that runs ``argv`` so that it and every descendant can write only beneath
        ``writable`` (absolute directories; an absolute non-directory such as ``/dev/null``
        grants writing that one file) and, unless ``readable`` is ``None``, read and execute
        only beneath ``readable`` and ``writable`` (absolute, existing; not empty). Same
        process (exec), environment and descriptors: already-open descriptors stay writable.
        Raises ``domain.errors.IsolationUnavailable`` if ``support().mode != "landlock"``,
        ``ValueError`` for an empty ``argv`` or a relative path. Where
        ``support().namespaces``, the returned argv also encloses the child as :meth:`enclose`
        does (namespaces outside, Landlock inside), and each ``read_only`` directory is
        mounted read-only in the child's mount namespace, but for the ``writable`` paths
        beneath it: what Landlock leaves a child (``chmod`` of an existing file) then fails
        there too (``EROFS``)."""
        ...

    def enclose(self, argv: Sequence[str]) -> list[str]:
        """argv that runs ``argv`` in process namespaces of its own (``support().namespaces``),
        so that its whole tree ends with it; ``argv`` unchanged where there are none. For a
        child that is not confined (``confine`` does it for one that is)."""
        ...


def check_confine_arguments(argv: Sequence[str], writable: Sequence[str]) -> None:
    """The ``ValueError`` every ``ChildIsolation.confine`` raises for an empty ``argv`` or a
    relative ``writable`` path. Landlock is Linux-only, so absolute is POSIX's absolute."""
    if not argv:
        raise ValueError("cannot confine an empty argv")
    for path in writable:
        if not posixpath.isabs(path):
            raise ValueError(f"writable paths must be absolute: {path!r}")

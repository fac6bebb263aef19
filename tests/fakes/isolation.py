"""A ``ChildIsolation`` that records every ``confine`` call and can report mode none."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from application.ports import IsolationSupport, check_confine_arguments
from domain.errors import IsolationUnavailable


@attrs.frozen
class ConfineCall:
    argv: tuple[str, ...]
    writable: tuple[str, ...]
    read_only: tuple[str, ...] = ()
    readable: tuple[str, ...] | None = None


@attrs.define
class FakeIsolation:
    """Mode landlock at ``abi`` unless ``unavailable`` names a reason (then mode none, and
    ``confine`` raises ``IsolationUnavailable`` after recording the call).

    ``confine`` returns ``[*prefix, *argv]``: with the default empty prefix the command runs as
    given, so tests with a fake Pi executable can still spawn it; a test can set a prefix (e.g.
    ``("env",)``) to see that the returned argv, not the original, was started.
    """

    abi: int = 7
    unavailable: str | None = None
    prefix: tuple[str, ...] = ()
    # every child in namespaces of its own; ``enclose`` adds ``enclose_prefix``
    namespaces: bool = False
    enclose_prefix: tuple[str, ...] = ()
    # called with (argv, writable) while the grants exist, to look at what the child will get
    on_confine: Callable[[tuple[str, ...], tuple[str, ...]], None] | None = None
    calls: list[ConfineCall] = attrs.field(factory=list)
    enclosed: list[tuple[str, ...]] = attrs.field(factory=list)

    @classmethod
    def none(cls, reason: str = "fake: no isolation") -> FakeIsolation:
        return cls(unavailable=reason)

    def support(self) -> IsolationSupport:
        if self.unavailable is not None:
            return IsolationSupport(
                mode="none", abi=None, reason=self.unavailable, namespaces=self.namespaces
            )
        return IsolationSupport(
            mode="landlock", abi=self.abi, reason=None, namespaces=self.namespaces
        )

    def enclose(self, argv: Sequence[str]) -> list[str]:
        self.enclosed.append(tuple(argv))
        return [*self.enclose_prefix, *argv]

    def confine(
        self,
        argv: Sequence[str],
        *,
        writable: Sequence[str],
        read_only: Sequence[str] = (),
        readable: Sequence[str] | None = None,
    ) -> list[str]:
        self.calls.append(
            ConfineCall(
                tuple(argv),
                tuple(writable),
                tuple(read_only),
                None if readable is None else tuple(readable),
            )
        )
        if self.on_confine is not None:
            self.on_confine(tuple(argv), tuple(writable))
        if self.unavailable is not None:
            raise IsolationUnavailable(self.unavailable)
        check_confine_arguments(argv, writable)
        return [*self.prefix, *argv]

"""``FlowError``: a refused flow call, with where, what was measured, what is allowed, and the
catalogue's cause, fix and retryability (``domain.flows.catalogue``).

Messages name JSON paths, schema-defined keys, counts and numbers; a string the caller wrote
appears only when it already passed a name pattern (agent names, node ids), never task text.
"""

from __future__ import annotations

from typing import Any

import attrs

from domain.errors import ErrorCode, PiSquadError
from domain.flows.catalogue import FLOW_CODES, entry


@attrs.frozen
class Problem:
    """One violation: ``path`` is a JSON path (``$.tasks[2].agent``); ``measured`` and
    ``allowed`` are JSON values (``None``: not applicable)."""

    code: ErrorCode
    path: str
    message: str
    measured: Any = None
    allowed: Any = None

    def document(self) -> dict[str, Any]:
        found: dict[str, Any] = {"code": str(self.code), "path": self.path, "message": self.message}
        if self.measured is not None:
            found["measured"] = self.measured
        if self.allowed is not None:
            found["allowed"] = self.allowed
        return found


class FlowError(PiSquadError):
    """A flow call refused before any child spawned (or a flow that failed as a whole).

    ``problems[0]`` is the one the code names; the rest are further violations of the same
    call, so one round trip fixes them all."""

    family_codes = FLOW_CODES

    def __init__(self, problems: tuple[Problem, ...] | Problem) -> None:
        found = problems if isinstance(problems, tuple) else (problems,)
        if not found:
            raise ValueError("a flow error names at least one problem")
        first = found[0]
        super().__init__(first.code, f"{first.path}: {first.message}")
        self.problems = found

    @property
    def path(self) -> str:
        return self.problems[0].path

    def document(self) -> dict[str, Any]:
        """The ``error`` object of the CLI's JSON and the tool's result."""
        first = self.problems[0]
        advice = entry(self.code)
        found: dict[str, Any] = {
            "code": str(self.code),
            "message": self.message,
            "path": first.path,
            "measured": first.measured,
            "allowed": first.allowed,
            "cause": advice.cause,
            "fix": advice.fix,
            "retryable": advice.retryable,
        }
        if len(self.problems) > 1:
            found["problems"] = [problem.document() for problem in self.problems]
        return found


def refuse(
    code: ErrorCode, path: str, message: str, *, measured: Any = None, allowed: Any = None
) -> FlowError:
    return FlowError(Problem(code, path, message, measured, allowed))

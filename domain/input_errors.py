"""The two ways an external input is rejected, kept apart from ``domain.inputs`` so that value
classes (agent definitions, used by every process) can raise them without importing jsonschema:
every child's bridge imports the ports, and its start-up time is paid per task."""

from __future__ import annotations

from collections.abc import Sequence


class InputRejected(ValueError):
    """An input that does not match its schema or its value class: one line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


class InvalidField(ValueError):
    """Raised by a value class's validator: ``field`` (a JSON path below ``$``) breaks a rule.

    ``detail`` must not quote the value."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail

"""The checks a flow call gets after its schema and before any spawn: the rules a JSON Schema
cannot state (contracts that compile, a monitor pattern that compiles) and the value rules cattrs
reports, each placed at its JSON path."""

from __future__ import annotations

import re
from collections.abc import Iterable

import cattrs

from domain.errors import ErrorCode
from domain.flows.call_roles import FlowTask
from domain.flows.contracts import Contract, check_contract
from domain.flows.errors import FlowError, Problem, refuse
from domain.flows.mode_fields import Monitor, Trigger
from domain.input_errors import InvalidField
from domain.names import camel


def check_contracts(contract: Contract | None, roles: Iterable[tuple[str, FlowTask]]) -> None:
    """Every contract of the call, the top-level one and each role's, has a returnSchema that
    compiles: ``INVALID_DELEGATION_CONTRACT`` before any child spawns (the schema checked the
    rest of each contract's shape)."""
    if contract is not None:
        check_contract(contract, "$.contract")
    for path, role in roles:
        if role.contract is not None:
            check_contract(role.contract, f"{path}.contract")


def check_monitor(monitor: Monitor | None) -> None:
    """A ``match`` monitor's pattern is given and compiles as a Python regular expression:
    ``MONITOR_INVALID`` before the first probe or spawn."""
    if monitor is None or monitor.trigger is not Trigger.MATCH:
        return
    if monitor.pattern is None:
        raise refuse(
            ErrorCode.MONITOR_INVALID,
            "$.monitor.pattern",
            "trigger match needs a pattern",
            measured="absent",
            allowed="a Python regular expression",
        )
    try:
        re.compile(monitor.pattern)
    except re.error as error:
        raise refuse(
            ErrorCode.MONITOR_INVALID,
            "$.monitor.pattern",
            f"is not a valid Python regular expression ({error.msg} at position {error.pos})",
            measured=f"a string of {len(monitor.pattern)} characters",
            allowed="a Python regular expression (docs/flows.md, monitor)",
        ) from None


def _value_rules(error: BaseException, path: str) -> list[Problem]:
    """The value rules broken below ``path``, each at its own JSON path."""
    if isinstance(error, InvalidField):
        return [Problem(ErrorCode.FLOW_INVALID, path, error.detail)]
    # Each failure below this one, at the path of the field or item it broke (or at ``path``
    # when cattrs cannot place it).
    placed: list[tuple[BaseException, str]]
    if isinstance(error, cattrs.ClassValidationError):
        with_notes, unplaced = error.group_exceptions()
        placed = [(sub, f"{path}.{camel(note.name)}") for sub, note in with_notes]
    elif isinstance(error, cattrs.IterableValidationError):
        indexed, unplaced = error.group_exceptions()
        placed = [(sub, f"{path}[{item.index}]") for sub, item in indexed]
    else:
        return [Problem(ErrorCode.FLOW_INVALID, path, "is not a valid value")]
    placed += [(sub, path) for sub in unplaced]
    return [problem for sub, where in placed for problem in _value_rules(sub, where)]


def structure_failure(exc: cattrs.ClassValidationError) -> FlowError:
    """A value rule the schema cannot state (a tool list mixing none/default with names)."""
    problems = _value_rules(exc, "$")
    return FlowError(tuple(problems) or Problem(ErrorCode.FLOW_INVALID, "$", "invalid call"))

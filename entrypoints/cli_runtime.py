"""``pi-squad modify`` and ``review``: the squad runtime's operator commands (``status`` is in
``squad_reading.py``, with the commands that only read).

They act on the store only. A scheduler running in another process sees every change on its
next reconcile (it stops children whose task is no longer in progress and spawns what became
ready), so these commands never need to reach a child themselves.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from application.squads.documents import review_document
from application.squads.operations import (
    TASK_ACTIONS,
    Action,
    NewTask,
    OperationResult,
    SquadOperations,
)
from application.squads.review import parse_review_call
from domain.errors import ErrorCode, SquadOperationError
from domain.input_errors import InputRejected
from domain.inputs import parse_input
from domain.spec.schema import vocabulary
from domain.squad.model import Actor, Verdict
from domain.strict_json import JsonDecodeFailure, decode_json_object
from entrypoints.commands import AddCommand
from entrypoints.container import CliContainer
from entrypoints.output import EXIT_OK, emit_json


def _task_input_error(message: str) -> SquadOperationError:
    return SquadOperationError(ErrorCode.TASK_INPUT_INVALID, f"--task-json: {message}")


def parse_task_json(text: str) -> NewTask:
    """``add_task``'s task, decoded strictly, then checked against ``new-task.schema.json`` and
    structured by the one input path (the Pi's ``squad_modify`` uses the same): unknown keys,
    wrong types and missing required fields are refused (never ignored or coerced)."""
    try:
        document = decode_json_object(text.encode("utf-8"), vocabulary=vocabulary("new-task"))
    except (JsonDecodeFailure, UnicodeEncodeError) as exc:
        reason = exc.reason if isinstance(exc, JsonDecodeFailure) else "not UTF-8 text"
        raise _task_input_error(f"not a JSON object: {reason}") from None
    try:
        return parse_input("new-task", document, NewTask)
    except InputRejected as exc:
        raise _task_input_error("; ".join(exc.problems)) from None


def _depends(value: str, usage: Callable[[str], NoReturn]) -> tuple[str, ...]:
    if value.strip() == "":
        return ()
    items = tuple(item.strip() for item in value.split(","))
    if any(not item for item in items):
        usage("--depends: an empty task id between commas; use a,b or '' to clear")
    return items


def _check_options(args: argparse.Namespace, action: Action) -> None:
    usage: Callable[[str], NoReturn] = args.usage
    allowed: set[str] = set()
    if action in TASK_ACTIONS:
        allowed.add("task_id")
        if args.task_id is None:
            usage(f"{action} requires --task-id")
    if action is Action.ADD_TASK:
        allowed.add("task_json")
        if args.task_json is None:
            usage("add_task requires --task-json")
    if action is Action.SET_DEPENDENCIES:
        allowed.add("depends")
        if args.depends is None:
            usage("set_dependencies requires --depends (an empty string clears them)")
    if action is Action.COMPLETE_TASK:
        allowed.add("output")
    for option in ("task_id", "task_json", "depends", "output"):
        if option not in allowed and getattr(args, option) is not None:
            usage(f"--{option.replace('_', '-')} does not apply to {action}")


def _run_action(
    args: argparse.Namespace, container: CliContainer, action: Action
) -> OperationResult:
    operations: SquadOperations = container.operations()
    return operations.apply(
        args.squad_id,
        action,
        task_id=args.task_id,
        depends=_depends(args.depends, args.usage) if args.depends is not None else None,
        output=args.output,
        task=parse_task_json(args.task_json) if args.task_json is not None else None,
        by=Actor.TERMINAL,
    )


def cmd_modify(args: argparse.Namespace, container: CliContainer) -> int:
    action = Action(args.action)
    _check_options(args, action)
    result = _run_action(args, container, action)
    if args.json:
        payload: dict[str, Any] = {"squadId": result.squad_id, "action": str(result.action)}
        if result.task_id is not None:
            payload["taskId"] = result.task_id
        payload["result"] = result.text
        emit_json(payload)
    else:
        print(result.text)
    return EXIT_OK


EVIDENCE_FLAGS = {
    "contractChecks": "--contract-check",
    "diffReview": "--diff-review",
    "verificationEvidence": "--verification",
    "integrationEvidence": "--integration",
    "issues": "--issue",
}


def cmd_review(args: argparse.Namespace, container: CliContainer) -> int:
    call = parse_review_call(
        {
            "verdict": args.verdict,
            "contractChecks": args.contract_check or [],
            "diffReview": args.diff_review or "",
            "verificationEvidence": args.verification or [],
            "integrationEvidence": args.integration or "",
            "issues": args.issue or [],
        }
    )
    # Missing evidence is named by the flag that gives it (after the squad's own checks).
    outcome = container.review_recorder().record_call(args.squad_id, call, EVIDENCE_FLAGS)
    if args.json:
        emit_json(
            {
                "squadId": outcome.squad_id,
                "verdict": str(outcome.verdict),
                "status": str(outcome.squad_status),
                "review": review_document(outcome.review),
                "result": outcome.text,
            }
        )
    else:
        print(outcome.text)
    return EXIT_OK


def add_runtime_commands(add: AddCommand) -> None:
    modify = add(
        "modify",
        cmd_modify,
        "Change a squad's work: add_task, set_dependencies, cancel_task, pause_task, "
        "resume_task, complete_task, or the whole squad's pause, resume and cancel.",
    )
    modify.add_argument("squad_id", metavar="SQUAD_ID")
    modify.add_argument("action", metavar="ACTION", choices=[a.value for a in Action])
    modify.add_argument("--task-id", metavar="ID")
    modify.add_argument("--depends", metavar="A,B", help="set_dependencies ('' clears them)")
    modify.add_argument("--output", metavar="TEXT", help="complete_task's accepted output")
    modify.add_argument(
        "--task-json",
        metavar="JSON",
        help="add_task: {id, title, description?, agent, depends?, inheritContext?, forkFromTask?}",
    )
    # ``cancel`` of a whole squad takes only its exact id (as the tool does), never a prefix.
    modify.set_defaults(usage=modify.error, exact_id_actions=(Action.CANCEL.value,))

    review = add(
        "review",
        cmd_review,
        "Record the orchestrator's review of a squad awaiting review (after revalidating "
        "every attestation).",
    )
    review.add_argument("squad_id", metavar="SQUAD_ID")
    review.add_argument("--verdict", required=True, choices=[v.value for v in Verdict])
    review.add_argument("--contract-check", action="append", metavar="TEXT")
    review.add_argument("--diff-review", metavar="TEXT")
    review.add_argument("--verification", action="append", metavar="TEXT")
    review.add_argument("--integration", metavar="TEXT")
    review.add_argument("--issue", action="append", metavar="TEXT")

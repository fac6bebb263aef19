"""``pi-squad delegate OPERATION``: one `delegate` request headless (docs/delegation.md).

``--request FILE`` or ``--request -`` (standard input) holds the same JSON the `delegate` tool
takes; its ``op`` must be the subcommand's (``follow-up`` is ``follow_up``). ``status`` needs no
request; ``renew`` takes none (it is not a tool op). ``--session NAME`` selects the durable
session (default ``default``). ``--json``: stdout is exactly one JSON object, the operation's
outcome or ``{"error": {"code", "message"}}`` with exit 1 for a refusal. A request process runs
no workers: ``run`` admits and queues, and the jobs start in a process that has workers
(``delegate work``, entrypoints/delegate_work.py, or the main Pi's bridge).

The grant flags (``--grant-root DIR``, ``--allowance N``) are the person at the terminal
granting more than the policy file. A session keeps the grant it was created under: a call
under another (other flags, an edited policy file) is answered read-only (``status``,
``collect``) or refused ``DELEGATE_GRANT_CHANGED``; only ``delegate renew`` adopts the call's
grant, as a new ``policyGeneration`` with the allowance renewed.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from application.delegation.host import DelegationHost
from application.ports import GrantSource, StableReadError
from domain.delegation.errors import DelegationError
from domain.delegation.policy import GrantFlags
from domain.errors import ErrorCode
from domain.strict_json import JsonDecodeFailure, decode_json
from entrypoints.commands import AddCommand, read_document
from entrypoints.container import CliContainer
from entrypoints.output import EXIT_OK, emit_json

MAX_REQUEST_BYTES = 1024 * 1024
OPERATIONS = (
    "run",
    "status",
    "collect",
    "follow-up",
    "resolve",
    "cancel",
    "capture",
    "work",
    "renew",
)


def _invalid(message: str) -> DelegationError:
    return DelegationError(ErrorCode.DELEGATE_INVALID, message)


def _read_request(source: str, container: CliContainer) -> object:
    try:
        data = read_document(source, container, MAX_REQUEST_BYTES)
    except StableReadError as error:
        raise _invalid(f"cannot read the request: {error.failure.value}") from None
    if len(data) > MAX_REQUEST_BYTES:
        raise _invalid(f"the request is larger than {MAX_REQUEST_BYTES} bytes")
    try:
        return decode_json(data)
    except JsonDecodeFailure as failure:
        raise _invalid(f"the request is not JSON: {failure}") from None


def _grants(args: argparse.Namespace, container: CliContainer, cwd: str) -> GrantSource:
    """The policy file's grant, and what the person at the terminal grants beyond it."""
    flags = GrantFlags(
        source_roots=tuple(os.path.abspath(root) for root in args.grant_root),
        allowance_requests=args.allowance,
    )
    grants: GrantSource = container.delegation.grants(cwd=cwd, flags=flags)
    return grants


def _answer(args: argparse.Namespace, outcome: dict[str, Any]) -> int:
    if args.json:
        emit_json(outcome)
    else:
        print(json.dumps(outcome, indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_delegate(args: argparse.Namespace, container: CliContainer) -> int:
    op = args.operation.replace("-", "_")
    if op == "work":
        return _work(args, container)
    if op == "renew":
        if args.request is not None:
            raise _invalid("delegate renew takes no --request: its grant is the flags and files")
        return _answer(args, _host(args, container).renew())
    if args.request is None:
        if op != "status":
            raise _invalid(f"delegate {args.operation} needs --request FILE or --request -")
        document: object = {"version": 1, "op": "status"}
    else:
        document = _read_request(args.request, container)
    if isinstance(document, dict) and document.get("op") != op:
        raise _invalid(f"$.op: this is `delegate {args.operation}`; the request must say {op}")
    return _answer(args, _host(args, container).handle(document))


def _host(args: argparse.Namespace, container: CliContainer) -> DelegationHost:
    """The session's host in this process (no workers), under this call's grant."""
    cwd = os.path.abspath(args.cwd if args.cwd is not None else os.getcwd())
    host: DelegationHost = container.delegation.host(
        session=args.session,
        ports=container.delegation.ports(grants=_grants(args, container, cwd)),
        cwd=cwd,
        worker_context=container.settings.worker_context(),
    )
    return host


def _work(args: argparse.Namespace, container: CliContainer) -> int:
    """``delegate work``: run the session's admitted jobs on real Pi until none is left."""
    from entrypoints.delegate_work import run_workers  # noqa: PLC0415 - Pi runtime, threads

    if container.settings.worker_context():
        raise DelegationError(
            ErrorCode.DELEGATE_POLICY_DENIED, "recursive delegation: a worker runs no workers"
        )
    cwd = os.path.abspath(args.cwd if args.cwd is not None else os.getcwd())
    outcome = run_workers(args, container, _grants(args, container, cwd), cwd)
    return _answer(args, outcome)


def add_delegate_commands(add: AddCommand) -> None:
    delegate = add(
        "delegate",
        cmd_delegate,
        "One `delegate` request: run, status, collect, follow-up, resolve, cancel or capture; "
        "work runs the admitted jobs on Pi; renew adopts this call's grant (the policy file and "
        "--grant-root/--allowance) as a new policy generation, renewing the allowance: the only "
        "way a session's grant changes (docs/delegation.md).",
    )
    delegate.add_argument("operation", choices=OPERATIONS)
    delegate.add_argument("--request", metavar="FILE", help="the JSON request; - for stdin")
    delegate.add_argument("--session", default="default", help="the delegation session")
    delegate.add_argument("--cwd", metavar="DIR", help="resolves relative capture paths")
    delegate.add_argument(
        "--grant-root",
        action="append",
        default=[],
        metavar="DIR",
        help="grant capture under DIR (repeatable; a human grant: every call to a session "
        "gives the same, and only renew changes it)",
    )
    delegate.add_argument(
        "--allowance", type=int, metavar="N", help="the session's model-request allowance"
    )

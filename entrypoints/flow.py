"""``pi-squad flow --call FILE``: one flow call run headless, its report printed (the command,
its arguments and exit codes are ``entrypoints/flow_command.py``'s). Loaded only for a call:
showing the recorded runs never imports the runner."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from application.flows.flow_catalogues import expand_call, listing
from application.flows.flow_report import FlowReport, error_text
from application.flows.flow_tool import handoff_line
from application.flows.run_flow import FlowContext
from application.ports import ReadFailure, StableReadError
from domain.errors import ErrorCode, PiSquadError
from domain.flows.call import Mode
from domain.flows.errors import FlowError, refuse
from domain.flows.graph import check_graph
from domain.flows.runs import ChildJob, RunResult
from domain.flows.sizing import check_parallel_sizing
from domain.strict_json import JsonDecodeFailure, decode_json
from entrypoints.commands import read_document
from entrypoints.concerns.driver import flow_runner_over
from entrypoints.container import CliContainer
from entrypoints.flow_command import refused_exit
from entrypoints.output import EXIT_OK, EXIT_REFUSED, emit_json

MAX_CALL_BYTES = 1024 * 1024


def _too_large() -> FlowError:
    return refuse(
        ErrorCode.FLOW_INVALID,
        "$",
        "the call is too large",
        measured=f"more than {MAX_CALL_BYTES} bytes",
        allowed=MAX_CALL_BYTES,
    )


def _read_call(source: str, container: CliContainer) -> object:
    try:
        data = read_document(source, container, MAX_CALL_BYTES)
    except StableReadError as error:
        if error.failure is ReadFailure.TOO_LARGE:
            raise _too_large() from None
        raise refuse(
            ErrorCode.FLOW_INVALID,
            "$",
            f"cannot read the call file: {error.failure.value}: {error.detail}",
        ) from None
    except OSError as error:
        raise refuse(
            ErrorCode.FLOW_INVALID,
            "$",
            f"cannot read the call: {error.strerror or type(error).__name__}",
        ) from None
    if len(data) > MAX_CALL_BYTES:
        raise _too_large()
    try:
        return decode_json(data)
    except JsonDecodeFailure as failure:
        raise refuse(ErrorCode.FLOW_INVALID, "$", f"the call is not JSON: {failure}") from None


def _live(job: ChildJob, result: RunResult | None) -> None:
    if result is None:
        line = f"flow: {job.key} ({job.role.agent}) started"
    else:
        code = f" {result.error_code}" if result.error_code is not None else ""
        line = (
            f"flow: {job.key} ({job.role.agent}) {result.status}{code} in {result.duration_ms} ms"
        )
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _ceilings(lines: list[str]) -> None:
    """The call's budget ceilings, shown before the first child starts."""
    for line in lines:
        sys.stderr.write(f"flow: {line}\n")
    sys.stderr.flush()


def _print_report(document: dict[str, Any]) -> None:
    print(document["summary"])
    print(f"flow {document['flowId']} ({document['mode']}): {document['status']}")
    for line in document.get("budget", {}).get("lines", ()):
        print(f"  {line}")
    for result in document["results"]:
        usage = result["usage"]
        line = (
            f"  {result['key']:<12} {result['agent']:<16} {result['status']:<10} "
            f"{result['durationMs']:>7} ms  {usage['input']}/{usage['output']} tokens  "
            f"${usage['cost']:.4f}"
        )
        print(line)
        if "error" in result:
            print(f"    {error_text(result['error'])}")
        if result.get("stopReason") == "budget_wrap_up":
            print("    stopped by the budget after its wrap-up notice (budget_wrap_up)")
        if "attestation" in result:
            attestation = result["attestation"]
            reason = f": {attestation['reason']}" if attestation["reason"] else ""
            print(f"    attestation {attestation['status']}{reason}")
        if result["output"]:
            print("    " + result["output"].replace("\n", "\n    "))
    for handoff in document.get("handoffs", ()):
        if handoff["action"] != "passed":
            print(f"  {handoff_line(handoff)}")
    if "spec" in document:
        spec = document["spec"]
        isolation = spec.get("isolationLayers") or spec["isolation"]
        print(
            f"brief: {spec['bytes']} bytes, {spec['chunks']} chunks, SHA-256 {spec['sha256']}, "
            f"squad {spec['squadId']} (isolation {isolation}); check: {spec['verify']}"
        )
    for name, value in document.get("config", {}).items():
        shown = ", ".join(value) if isinstance(value, list) else value
        if not isinstance(value, dict):
            print(f"  {name}: {shown}")
    for line in document.get("modelRoster", ()):
        print(f"  {line}")
    if "agents" in document:
        print(f"agents in scope {document['agentScope']}:")
        for agent in document["agents"]:
            print(f"  {agent['name']:<16} {agent['source']:<8} {agent['description']}")
        print("presets:")
        for preset in document["presets"]:
            print(f"  {preset['name']:<16} {preset['source']:<8} {preset['description']}")
        for issue in document["discoveryIssues"]:
            print(f"  warning: {issue}")


def _run_cancellable(run: Callable[[], FlowReport], cancel: Callable[[], None]) -> FlowReport:
    """``run`` on a thread, so Ctrl+C (``KeyboardInterrupt`` in this, the main thread) can
    cancel the flow and still get its partial results."""
    outcome: list[FlowReport] = []
    failure: list[BaseException] = []
    finished = threading.Event()

    def target() -> None:
        try:
            outcome.append(run())
        except BaseException as error:  # handed to the main thread, raised there
            failure.append(error)
        finally:
            finished.set()

    worker = threading.Thread(target=target, name="flow")
    worker.start()
    # An event, not ``join``: a ``join`` interrupted by Ctrl+C can leave ``is_alive`` wrong.
    while not finished.is_set():
        try:
            finished.wait(0.2)
        except KeyboardInterrupt:
            sys.stderr.write("flow: cancelling: stopping every child\n")
            cancel()
    worker.join()
    if failure:
        raise failure[0]
    return outcome[0]


def _answer_without_pi(
    document: object, container: CliContainer, cwd: str, unavailable: PiSquadError
) -> FlowReport:
    """What a call answers when no Pi runtime is found: checks that need no Pi come first (a
    malformed call, an unsized fan-out, a graph that could not finish: ``FlowError``), ``list``
    is answered whole, and only a call that would start children is ``RUNTIME_UNAVAILABLE``."""
    presets = container.adapters.preset_directory()
    call, _ = expand_call(document, presets, cwd, interactive=False)
    if call.mode is Mode.LIST:
        agents = container.adapters.flow_agent_directory()
        flow_id = container.ids().uuid4_hex()[:16]
        return FlowReport(flow_id, call, details=listing(call, agents, presets, cwd))
    check_parallel_sizing(call)
    if call.graph is not None:
        check_graph(call.graph)
    raise unavailable


def run_call(args: argparse.Namespace, container: CliContainer) -> int:
    cwd = os.path.abspath(args.cwd if args.cwd is not None else os.getcwd())
    model = args.model if args.model is not None else container.settings.default_model()
    try:
        document = _read_call(args.call, container)
        try:
            # What the runtime can confine decides whether bash-ro can be enforced (as for
            # squads).
            runtime = container.driver.runtime(provider=args.provider)
        except PiSquadError as error:
            if error.code is not ErrorCode.RUNTIME_UNAVAILABLE:
                raise
            report = _answer_without_pi(document, container, cwd, error)
        else:
            tiers = container.settings.tier_models()
            runner = flow_runner_over(container.flow_runner, runtime, tiers)
            home = container.environ().get("HOME") or None
            provider = args.provider or container.settings.default_provider()
            context = FlowContext(
                cwd=cwd, session_model=model, home=home, session_provider=provider
            )
            observer = None if args.json else _live
            ceilings = None if args.json else _ceilings
            report = _run_cancellable(
                lambda: runner.run(document, context, observer, ceilings=ceilings), runner.cancel
            )
    except FlowError as error:
        return refused_exit(error, args.json)
    payload = report.document()
    failed = next((r for r in payload["results"] if "error" in r and r["status"] == "failed"), None)
    if failed is not None:
        payload["error"] = {**failed["error"], "key": failed["key"]}
    if args.json:
        emit_json(payload)
    else:
        _print_report(payload)
    return EXIT_OK if report.status == "completed" else EXIT_REFUSED

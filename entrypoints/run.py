"""``pi-squad run`` and ``pi-squad demo``: create a squad and drive it headlessly to review."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dependency_injector import providers

from adapters.isolation.confinement import refuse_project_holding_root
from adapters.isolation.landlock import select_isolation
from adapters.pi_rpc import PiRpcRuntime
from adapters.pi_runtime import (
    doctor,
)
from adapters.scripted_model import ScriptedModelServer, write_models_json
from application.squads.create_squad import create_squad
from application.squads.drive import DriveOutcome
from application.squads.next_steps import INTERRUPTED, next_command
from application.squads.status import stop_reason
from application.squads.verify import audit_squad
from domain.errors import ErrorCode, IsolationTooWeak, IsolationUnavailable, SquadOperationError
from domain.isolation_level import signal_isolation_problem
from domain.squad.model import SquadStatus
from entrypoints.children import EXTENSION_DIR
from entrypoints.container import CliContainer
from entrypoints.demo import DEMO_MODEL, DEMO_PROVIDER, prepare_demo, run_demo_inside_pi
from entrypoints.interrupts import sigint_as_stop_request
from entrypoints.output import EXIT_OK, EXIT_REFUSED, emit_json
from entrypoints.watch import EXIT_INTERRUPTED, drive_view


def _summary(container: CliContainer, outcome: DriveOutcome) -> dict[str, Any]:
    snapshot = outcome.snapshot
    # One verified read of the canonical spec judges every task, in the words of every face.
    tasks = [
        {
            "taskId": audited.task_id,
            "status": str(audited.status),
            "attestation": str(audited.attestation),
            "attestationState": str(audited.word.word),
            "attestationText": audited.word.text,
            "reason": stop_reason(task) if (task := snapshot.tasks.get(audited.task_id)) else None,
        }
        for audited in audit_squad(container.auditor(), snapshot.squad.id).tasks
    ]
    return {
        "squadId": snapshot.squad.id,
        "squadDir": container.store().squad_dir(snapshot.squad.id),
        "status": str(snapshot.squad.status),
        "reason": outcome.reason,
        "tasks": tasks,
        "next": next_command(snapshot.squad.id, outcome.reason, snapshot.tasks),
    }


def drive(
    container: CliContainer,
    squad_id: str,
    *,
    runtime: PiRpcRuntime,
    as_json: bool,
    default_model: str | None,
    require_isolation: bool = False,
    root_hint: str | None = None,
) -> int:
    """Drive to a stop and summarise. ``root_hint``: a squad root the user's shell does not
    have (the demo's), named in the next command so that it can be typed as printed."""
    # The live view of ``pi-squad watch`` on a terminal, its plain lines otherwise.
    try:
        with drive_view(container, squad_id, as_json=as_json) as view:
            scheduler = container.driver.scheduler(
                squad_id,
                runtime,
                view.notice,
                default_model=default_model,
                require_isolation=require_isolation,
            )
            # The view's clocks (elapsed time per task) move every interval even when no
            # child speaks, so the loop wakes that often; without a view it sleeps longer.
            with sigint_as_stop_request(scheduler.wake) as should_stop:
                outcome: DriveOutcome = container.driver.drive(
                    scheduler,
                    on_progress=view,
                    poll_seconds=view.interval,
                    should_stop=should_stop,
                )
    except KeyboardInterrupt:
        # Ctrl+C before the drive began (or outside the main thread): nothing was running yet,
        # or the drive loop stopped every child and suspended its task on its session.
        outcome = DriveOutcome(container.store().snapshot(squad_id), INTERRUPTED)
    summary = _summary(container, outcome)
    if root_hint is not None:
        summary["next"] = f"export PI_SQUAD_ROOT={shlex.quote(root_hint)}, then {summary['next']}"
    if as_json:
        emit_json(summary)
    else:
        print(f"squad {summary['squadId']} stopped: {summary['reason']}")
        for task in summary["tasks"]:
            line = (
                f"  {task['taskId']:<24} {task['status']:<12} attestation {task['attestationText']}"
            )
            if task["reason"] is not None:
                line += f": {task['reason']}"
            print(line)
        print(f"squad directory: {summary['squadDir']}")
        if outcome.reason == INTERRUPTED:
            print("live tasks are suspended on their sessions; the chunks they read are kept")
        print(f"next: {summary['next']}")
    if outcome.reason == INTERRUPTED:
        return EXIT_INTERRUPTED
    reached = outcome.snapshot.squad.status in {SquadStatus.REVIEW, SquadStatus.DONE}
    return EXIT_OK if reached else EXIT_REFUSED


def cmd_run(args: argparse.Namespace, container: CliContainer) -> int:
    cwd = os.path.abspath(args.cwd or os.getcwd())
    runtime: PiRpcRuntime = container.driver.runtime(provider=args.provider)
    required = args.require_isolation or container.settings.require_isolation()
    support = runtime.isolation
    if required and support.mode != "landlock":
        # Before anything is published: a refused run leaves nothing behind.
        raise IsolationUnavailable(support.reason or "no isolation available")
    too_weak = signal_isolation_problem(support.level) if required else None
    if too_weak is not None:
        raise IsolationTooWeak(too_weak)
    if support.mode == "landlock" and args.squad is None:
        # A confined child may write its project: one that holds the squad root would hand
        # every child every squad record, one that holds pi-squad's or Pi's own code would let
        # a child rewrite what starts the next child, so every spawn would be refused. Say so
        # now.
        refuse_project_holding_root(cwd, container.squad_root(), protected=runtime.protected_code)
    if args.squad is not None:
        squad_id = args.squad
    else:
        if args.spec_file is None or args.spec_sha256 is None:
            raise SquadOperationError(
                ErrorCode.OPERATION_REFUSED,
                "run needs --spec-file and --spec-sha256, or --squad SQUAD_ID to continue a squad",
            )
        published = create_squad(
            container.publisher(),
            container.agent_catalog(cwd=cwd),
            spec_file=args.spec_file,
            spec_sha256=args.spec_sha256,
            cwd=cwd,
        )
        squad_id = published.squad.id
        if not args.json:
            print(f"published squad {squad_id} ({len(published.tasks)} tasks)")
    return drive(
        container,
        squad_id,
        runtime=runtime,
        as_json=args.json,
        default_model=args.model,
        require_isolation=required,
    )


@contextlib.contextmanager
def _demo_workspace(requested: str | None) -> Iterator[Path]:
    if requested is not None:
        path = Path(requested).resolve()
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    yield Path(tempfile.mkdtemp(prefix="pi-squad-demo-"))


def cmd_demo(args: argparse.Namespace, container: CliContainer) -> int:
    with _demo_workspace(args.workspace) as workspace:
        project, root, digest = prepare_demo(workspace)
        # The demo's own squad root, for this process and every child it starts (the
        # settings are read when first asked for: nothing has read the root yet).
        demo_environ = {**container.environ(), "PI_SQUAD_ROOT": str(root)}
        container.environ.override(providers.Object(demo_environ))
        if args.pi:
            return run_demo_inside_pi(container, project, digest)
        if not args.json:
            print(f"demo workspace: {workspace}")
        with ScriptedModelServer("diligent") as model:
            agent_dir = workspace / "pi-agent"
            write_models_json(agent_dir, model.base_url)
            published = create_squad(
                container.publisher(),
                container.agent_catalog(cwd=str(project)),
                spec_file="demo.spec.json",
                spec_sha256=digest,
                cwd=str(project),
            )
            if not args.json:
                spec = published.squad.spec
                assert spec is not None
                print(
                    f"published squad {published.squad.id}: {spec.bytes} bytes, "
                    f"{spec.chunk_count} chunks, {len(published.tasks)} tasks"
                )
            runtime = container.driver.runtime(agent_dir=str(agent_dir), provider=DEMO_PROVIDER)
            return drive(
                container,
                published.squad.id,
                runtime=runtime,
                as_json=args.json,
                default_model=DEMO_MODEL,
                root_hint=str(root),
            )


def isolation_line(isolation: dict[str, Any]) -> str:
    """``namespaces+landlock(ABI 7, scoped)``, or the layers and why write isolation is missing
    (``namespaces (why)``, ``none (why)``): the doctor line for ``doctor()["isolation"]``."""
    layers = isolation.get("layers")
    if isolation["mode"] == "landlock":
        return str(layers or f"landlock (ABI {isolation['abi']})")
    return f"{layers or isolation['mode']} ({isolation['reason']})"


def bubblewrap_line(bubblewrap: dict[str, Any] | None) -> str | None:
    """``bubblewrap /usr/bin/bwrap: ok``, or why it cannot run (with the install command where
    it is missing)."""
    if bubblewrap is None:
        return None
    if bubblewrap["available"]:
        return f"bubblewrap {bubblewrap['path']}: ok"
    return f"bubblewrap UNAVAILABLE: {bubblewrap['detail']}"


def doctor_lines(report: dict[str, Any]) -> list[str]:
    """The text form of ``doctor()``'s report: one line per check, then one per warning."""
    python, node, pi, extension = (report[k] for k in ("python", "node", "pi", "extension"))
    python_state = "ok" if python["ok"] else "TOO OLD (need 3.11+)"
    node_text = node["version"] or "-"
    pi_text = pi["version"] or "-"
    source = f" ({pi['source']}: {pi['path']})" if pi["ok"] else f" {pi['detail']}"
    loads = "loads" if extension["loads"] else f"DOES NOT LOAD: {extension['detail']}"
    return [
        f"python    {python['version']:<10} {python_state}",
        f"node      {node_text:<10} {'ok' if node['ok'] else node['detail']}",
        f"pi        {pi_text:<10} {'ok' if pi['ok'] else 'MISSING'}{source}",
        f"extension {extension['path']}: {loads}",
        *bridge_lines(report.get("bridge")),
        f"isolation {isolation_line(report['isolation'])}",
        *filter(None, [bubblewrap_line(report.get("bubblewrap"))]),
        *(f"warning   {warning['message']}" for warning in report["warnings"]),
    ]


def bridge_lines(bridge: dict[str, Any] | None) -> list[str]:
    """``bridge    ok (install: argv)``, or the failure and the remedy the shim shows in Pi."""
    if bridge is None or bridge["ok"] is None:
        return []
    if bridge["ok"]:
        argv = " ".join(bridge["argv"] or [])
        return [f"bridge    ok ({bridge['source']}: {argv})"]
    lines = [f"bridge    FAILS: {bridge['detail']}"]
    if bridge["remedy"]:
        lines.append(f"fix       {bridge['remedy']}")
    return lines


def cmd_doctor(args: argparse.Namespace, container: CliContainer) -> int:
    """Checks the extension as the user's own Pi starts it: this process's environment as is,
    so the bridge found (or not) is the one Pi would find."""
    environ = container.environ()
    report = doctor(
        EXTENSION_DIR,
        environ=environ,
        runtime_override=container.settings.runtime_dir(),
        isolation=select_isolation(container.settings.isolation(), environ),
        expect_bridge=True,
    )
    if args.json:
        emit_json(report)
    else:
        for line in doctor_lines(report):
            print(line)
    return EXIT_OK if report["ok"] else EXIT_REFUSED


AddCommand = Callable[
    [str, Callable[[argparse.Namespace, CliContainer], int], str], argparse.ArgumentParser
]


def add_run_commands(add: AddCommand) -> None:
    run = add("run", cmd_run, "Create a squad from a spec file and drive it headlessly to review.")
    run.add_argument("--spec-file", metavar="PATH")
    run.add_argument("--spec-sha256", metavar="HEX")
    run.add_argument("--squad", metavar="SQUAD_ID", help="continue driving an existing squad")
    run.add_argument("--cwd", metavar="DIR", help="the squad's working directory")
    run.add_argument("--provider", help="Pi provider for children whose agent sets none")
    run.add_argument("--model", help="Pi model for children whose agent sets none")
    run.add_argument(
        "--require-isolation",
        action="store_true",
        help="refuse to start children without kernel write isolation "
        "(also PI_SQUAD_REQUIRE_ISOLATION=1)",
    )
    add(
        "doctor", cmd_doctor, "Report Python, Node and Pi versions and whether the extension loads."
    )
    demo = add("demo", cmd_demo, "Run the bundled demo squad offline on a scripted model.")
    demo.add_argument(
        "--workspace", metavar="DIR", help="where to put the demo (default: a new temp dir)"
    )
    demo.add_argument(
        "--pi",
        action="store_true",
        help="start the squad from inside an interactive Pi instead (the live view, /squad and "
        "the review gate, offline; your own Pi configuration is not used)",
    )

"""What the real-Pi tests of children as processes share (issue 28): a squad of a few tasks on
test-made scripted policies, each of which reads the whole spec and then runs one ``bash``
script, and the ``pi-squad run`` that drives it with the driver's own temporary directory."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.replies import PlannedCall, PolicyState, Reply
from adapters.scripted_model.spec_reading import spec_progress
from adapters.scripted_model.spec_reports import (
    DILIGENT_BATCH,
    VERDICT_PASS,
    next_reads,
    read_summary,
)
from domain.child_environment import ALL_CHILD_VARIABLES
from tests.builders import encode, spec_document, task
from tests.e2e.real_pi import RealPiWorld, run_argv
from tests.squads import multibyte_text

RUN_TIMEOUT = 150.0
Policy = Callable[[Conversation, PolicyState], Reply]


def bash_after_reading(name: str, script: Callable[[], str], outputs: dict[str, str]) -> Policy:
    """Reads every chunk, then one ``bash`` call running ``script()`` (built when it is due),
    then a PASS report quoting its output, which also lands in ``outputs[name]``."""

    def policy(conversation: Conversation, state: PolicyState) -> Reply:
        del state
        progress = spec_progress(conversation)
        step = next_reads(progress, batch=DILIGENT_BATCH)
        if step is not None:
            return step
        calls = list(conversation.calls("bash"))
        if not calls and conversation.offers("bash"):
            return Reply("Reading done; one check.", (PlannedCall("bash", {"command": script()}),))
        result = conversation.result_for(calls[-1][1].id) if calls else None
        output = result.text if result is not None else "(no bash)"
        outputs[name] = output
        return Reply(f"{read_summary(name, progress)}\n\n{output}\n\n{VERDICT_PASS}\n")

    return policy


def held_until(event: threading.Event, policy: Policy, timeout: float = 90.0) -> Policy:
    """``policy``, whose first answer waits for ``event``: its child's Pi stays alive meanwhile,
    waiting on the model."""

    def held(conversation: Conversation, state: PolicyState) -> Reply:
        event.wait(timeout)
        return policy(conversation, state)

    return held


def agent_definition(name: str, policy: str) -> dict[str, Any]:
    return {
        "name": name,
        "role": f"{name} engineer",
        "description": f"The {name} agent of the child-process tests.",
        "model": None,
        "thinking": None,
        "tools": None,
        "tags": ["test"],
        "prompt": f"You are the squad's {name} engineer. Read the whole spec first.\n"
        f"scripted-policy: {policy}",
    }


@attrs.define
class ChildSquad(RealPiWorld):
    """A squad of independent tasks, one agent each (named as the task) on the named policy."""

    @property
    def tmp(self) -> Path:
        """The driver's temporary directory, where each confined child's scratch is made."""
        return self.base / "tmp"

    def write_squad(self, policies: Mapping[str, str], *, concurrency: int = 2) -> None:
        self.agents.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(exist_ok=True)
        (self.base / "home").mkdir(exist_ok=True)
        for name, policy in policies.items():
            (self.agents / f"{name}.json").write_text(json.dumps(agent_definition(name, policy)))
        tasks = [task(name, agent=name, description=multibyte_text(20_000)) for name in policies]
        document = spec_document(
            goal="Ship a tested feature.",
            tasks=tasks,
            agents={name: {"model": None, "thinking": None} for name in policies},
            config={"maxConcurrency": concurrency, "autoUnblock": True, "maxRetries": 1},
        )
        (self.project / "squad-spec.json").write_bytes(encode(document))

    def environment(self, **settings: str) -> dict[str, str]:
        env = self.pi_environment()
        for name in (
            *ALL_CHILD_VARIABLES,
            "PI_SQUAD_ISOLATION",
            "PI_SQUAD_REQUIRE_ISOLATION",
            "PI_SQUAD_TEST_LANDLOCK_ABI",
        ):
            env.pop(name, None)
        env.update(PI_SQUAD_ROOT=str(self.root), HOME=str(self.base / "home"), TMPDIR=str(self.tmp))
        env.update(settings)
        return env

    def run_argv(self) -> list[str]:
        spec = self.project / "squad-spec.json"
        digest = hashlib.sha256(spec.read_bytes()).hexdigest()
        return run_argv(spec, digest, self.project, "--json")

    def run(self, **settings: str) -> tuple[int, dict[str, Any], str]:
        done = subprocess.run(
            self.run_argv(),
            env=self.environment(**settings),
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        summary = json.loads(lines[-1]) if lines else {}
        return done.returncode, summary, done.stdout + done.stderr

    def squad_dir(self) -> Path:
        (squad,) = [p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")]
        return squad

    def squad_json(self) -> dict[str, Any]:
        return dict(json.loads((self.squad_dir() / "squad.json").read_bytes()))

    def spawns(self, task_id: str) -> int:
        path = self.squad_dir() / ".records" / task_id / "observed.jsonl"
        lines = path.read_bytes().splitlines() if path.exists() else []
        return sum(1 for line in lines if line.strip() and json.loads(line)["kind"] == "spawn")

    def cli_json(self, *args: str) -> dict[str, Any]:
        done = self.cli(*args, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        return dict(json.loads(done.stdout))


def processes_with(token: str) -> list[int]:
    """The pids whose command line holds ``token`` (this machine's, whatever namespace)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(entry))
    return found


def node_of_task(task_id: str) -> int | None:
    """The pid (as this process sees it) of the ``node`` running ``task_id``'s Pi."""
    wanted = f"PI_SQUAD_TASK_ID={task_id}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv0 = handle.read().split(b"\0", 1)[0]
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv0) == b"node" and wanted in environ:
            return int(entry)
    return None


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)

"""What the real-Pi tests of children as processes share (issue 28): a squad of a few tasks on
test-made scripted policies, each of which reads the whole spec and then runs one ``bash``
script, and the ``pi-squad run`` that drives it with the driver's own temporary directory."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.replies import PolicyState, Reply
from adapters.scripted_model.spec_reports import bash_output, read_then_bash
from tests.e2e.real_pi import RealPiWorld, agents_spec, run_argv, squad_agent

RUN_TIMEOUT = 150.0
Policy = Callable[[Conversation, PolicyState], Reply]


def bash_after_reading(name: str, script: Callable[[], str], outputs: dict[str, str]) -> Policy:
    """Reads every chunk, then one ``bash`` call running ``script()`` (built when it is due),
    then a PASS report quoting its output, which also lands in ``outputs[name]``."""

    def policy(conversation: Conversation, state: PolicyState) -> Reply:
        del state
        reply = read_then_bash(
            conversation, policy=name, announce="Reading done; one check.", script=script
        )
        if not reply.tool_calls:
            outputs[name] = bash_output(conversation)
        return reply

    return policy


def held_until(event: threading.Event, policy: Policy, timeout: float = 90.0) -> Policy:
    """``policy``, whose first answer waits for ``event``: its child's Pi stays alive meanwhile,
    waiting on the model."""

    def held(conversation: Conversation, state: PolicyState) -> Reply:
        event.wait(timeout)
        return policy(conversation, state)

    return held


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
            agent = squad_agent(name, f"scripted-policy: {policy}", "the child-process tests")
            (self.agents / f"{name}.json").write_text(json.dumps(agent))
        spec = agents_spec(
            list(policies), chained=False, text_bytes=20_000, concurrency=concurrency
        )
        (self.project / "squad-spec.json").write_bytes(spec)

    def environment(self, **settings: str) -> dict[str, str]:
        env = self.user_environment("PI_SQUAD_TEST_LANDLOCK_ABI")
        env.update(TMPDIR=str(self.tmp), **settings)
        return env

    def run_argv(self) -> list[str]:
        spec = self.project / "squad-spec.json"
        digest = hashlib.sha256(spec.read_bytes()).hexdigest()
        return run_argv(spec, digest, self.project, "--json")

    def run(self, **settings: str) -> tuple[int, dict[str, Any], str]:
        spec = self.project / "squad-spec.json"
        done = self.run_squad(spec, self.environment(**settings), RUN_TIMEOUT)
        return done.returncode, done.summary, done.stdout + done.stderr

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

"""The squad of the trust-boundary tests (``honest -> saboteur -> victim`` on the scripted model),
the witness of the saboteur's attacks, and the checks of what the parent accepted."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.policies import (
    ATTACK_PREFIX,
    SABOTEUR_ATTACKS,
    SABOTEUR_DONE,
    SABOTEUR_LOG,
    PolicyState,
    Reply,
    saboteur,
)
from adapters.scripted_model.saboteur import PLANTED_LOADED_PREFIX
from tests.e2e.real_pi import RealPiWorld, agents_spec, isolation_settings, squad_agent

HONEST, SABOTEUR, VICTIM = "honest", "saboteur", "victim"
TASKS = (HONEST, SABOTEUR, VICTIM)
RUN_TIMEOUT = 120.0
SCRIPT_GRACE_SECONDS = 60.0
LEDGER_FILES = ("spec-read-state.json", "spec-read-attestation.json")


# Landlock refuses a write with EACCES; the squad root mounted read-only in a child's namespace
# (bubblewrap) refuses it first with EROFS.
PERMISSION = re.compile(
    r"Permission denied|PermissionError|EACCES|Errno 13|Read-only file system|EROFS|Errno 30"
)
ATTACK_LINE = re.compile(rf"^{ATTACK_PREFIX}(\S+): rc=(\d+) ?(.*)$", re.MULTILINE)


def spec_bytes() -> bytes:
    """Three tasks in a chain over a spec of three chunks."""
    return agents_spec(TASKS, chained=True)


def agent_definition(name: str, markers: str) -> dict[str, Any]:
    return squad_agent(name, markers, "the trust-boundary test")


@attrs.define
class AttackWitness:
    """Snapshots of the siblings' files around the saboteur's one ``bash`` call."""

    root: Path
    before: dict[str, bytes | None] | None = None
    after: dict[str, bytes | None] | None = None
    squad_before: dict[str, Any] | None = None
    output: str | None = None
    lock: threading.Lock = attrs.Factory(threading.Lock)

    def squad_dir(self) -> Path:
        (squad,) = [p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")]
        return squad

    def watched(self) -> list[Path]:
        squad = self.squad_dir()
        files = [squad / task_id / name for task_id in (HONEST, VICTIM) for name in LEDGER_FILES]
        for task_id in (HONEST, VICTIM):
            records = squad / ".records" / task_id
            files += [records / name for name in ("task.json", "observed.jsonl")]
        files.append(squad / ".records" / HONEST / "messages.jsonl")
        return files

    def snapshot(self) -> dict[str, bytes | None]:
        taken = {str(p): p.read_bytes() if p.exists() else None for p in self.watched()}
        squad = self.squad_dir()
        for directory in (squad / HONEST, squad / VICTIM, squad / ".records"):
            names = sorted(os.listdir(directory)) if directory.is_dir() else None
            taken[f"{directory}/"] = None if names is None else "\n".join(names).encode()
        return taken

    def policy(self, conversation: Conversation, state: PolicyState) -> Reply:
        reply = saboteur(conversation, state)
        with self.lock:
            bash_calls = [call for _, call in conversation.calls("bash")]
            if not bash_calls and any(c.name == "bash" for c in reply.tool_calls):
                self.before = self.snapshot()
                self.squad_before = json.loads((self.squad_dir() / "squad.json").read_bytes())
            elif bash_calls and self.after is None:
                self.after = self.snapshot()
                result = conversation.result_for(bash_calls[-1].id)
                self.output = result.text if result is not None else ""
        return reply

    def attacks(
        self, project: Path, expected: tuple[str, ...] = SABOTEUR_ATTACKS
    ) -> dict[str, tuple[int, str]]:
        """``name -> (rc, output tail)`` from the script's own log (it outlives a killed child);
        the output Pi handed back to the model, when it did, says the same."""
        log = project / SABOTEUR_LOG
        assert log.exists(), "the saboteur never ran its script"
        # The script runs detached from the child, so it may still be at work after the parent
        # stopped that child (a quarantine): wait for its last line before judging.
        deadline = time.monotonic() + SCRIPT_GRACE_SECONDS
        text = log.read_text(encoding="utf-8")
        while SABOTEUR_DONE not in text and time.monotonic() < deadline:
            time.sleep(0.1)
            text = log.read_text(encoding="utf-8")
        print(text)  # shown with a failure
        assert SABOTEUR_DONE in text, text
        if self.output is not None:
            assert text.strip() in self.output, self.output
        found = {m.group(1): (int(m.group(2)), m.group(3)) for m in ATTACK_LINE.finditer(text)}
        assert set(found) == set(expected), text
        return found


@attrs.define
class Squad(RealPiWorld):
    witness: AttackWitness

    @property
    def user_agent_dir(self) -> Path:
        """The Pi agent directory of the user who runs the squad (``pi_environment``'s)."""
        return Path(self.pi_environment()["PI_CODING_AGENT_DIR"])

    def planted_code_that_ran(self) -> list[str]:
        return sorted(p.name for p in self.project.glob(f"{PLANTED_LOADED_PREFIX}*"))

    def environment(self, isolation: str | None) -> dict[str, str]:
        return self.user_environment() | isolation_settings(isolation)

    def run(self, isolation: str | None) -> tuple[int, dict[str, Any], str]:
        spec = self.project / "squad-spec.json"
        done = self.run_squad(spec, self.environment(isolation), RUN_TIMEOUT)
        return done.returncode, done.summary, done.stderr

    @property
    def squad_dir(self) -> Path:
        return self.witness.squad_dir()

    def squad_json(self) -> dict[str, Any]:
        return dict(json.loads((self.squad_dir / "squad.json").read_bytes()))

    def task_json(self, task_id: str) -> dict[str, Any]:
        return dict(json.loads((self.squad_dir / ".records" / task_id / "task.json").read_bytes()))

    def attestation(self, task_id: str) -> dict[str, Any] | None:
        path = self.squad_dir / task_id / "spec-read-attestation.json"
        return dict(json.loads(path.read_bytes())) if path.exists() else None

    def observed(self, task_id: str) -> list[dict[str, Any]]:
        path = self.squad_dir / ".records" / task_id / "observed.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def own_reads(squad: Squad, task_id: str) -> None:
    """The task's attestation was earned by its own child: every chunk's ``toolCallId`` is a
    delivery the parent observed in the task's own bound session, after the task's own spawn."""
    attestation = squad.attestation(task_id)
    assert attestation is not None, f"{task_id} has no attestation"
    assert attestation["taskId"] == task_id
    session = squad.task_json(task_id)["session"]["file"]
    assert Path(session).is_relative_to(squad.squad_dir / task_id / "session")
    observed = squad.observed(task_id)
    deliveries = {
        o["toolCallId"]: o
        for o in observed
        if o["kind"] == "delivery" and o["sessionFile"] == session
    }
    for chunk in attestation["chunks"]:
        assert not chunk["toolCallId"].startswith("forged-")
        seen = deliveries.get(chunk["toolCallId"])
        assert seen is not None, f"{task_id} chunk {chunk['index']}: {chunk['toolCallId']}"
        assert seen["index"] == chunk["index"]
        assert seen["chunkSha256"] == chunk["sha256"]


GROUNDING_ATTACKS = (
    "bridge-as-sibling",
    "copy-attestation",
    "complete-sibling",
    "edit-sibling-task-json",
    "plant-extension",
)


def assert_forged_bridge_committed(attacks: Mapping[str, tuple[int, str]]) -> None:
    """Unconfined, a bridge started as the victim commits a forged ledger and opens its guard:
    the child-side ledger alone proves nothing."""
    rc, output = attacks["bridge-as-sibling"]
    assert rc == 0, output
    assert "role=child-spec" in output, output
    assert "forged=True" in output, output
    assert "'block': False" in output, output


def assert_complete_task_refused_as_ungrounded(attacks: Mapping[str, tuple[int, str]]) -> None:
    rc, output = attacks["complete-sibling"]
    assert rc != 0, output
    assert "ATTESTATION_INVALID" in output, output
    assert "not grounded" in output, output


def assert_review_with_every_task_done_and_valid(summary: Mapping[str, Any]) -> None:
    assert summary["status"] == "review", summary
    assert {t["taskId"]: (t["status"], t["attestation"]) for t in summary["tasks"]} == (
        dict.fromkeys(TASKS, ("done", "valid"))
    ), summary


def assert_verify_and_status_pass(squad: Squad, squad_id: str, isolation: str) -> dict[str, Any]:
    """``verify`` passes with every task's attestation valid, and ``verify`` and ``status`` both
    report the ``isolation`` mode; the verify report, for further checks."""
    verified = squad.cli("verify", squad_id, "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report: dict[str, Any] = json.loads(verified.stdout)
    assert {t["taskId"]: t["attestation"] for t in report["tasks"]} == dict.fromkeys(TASKS, "valid")
    assert report["isolation"]["mode"] == isolation
    status = squad.cli("status", squad_id, "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    assert json.loads(status.stdout)["isolation"]["mode"] == isolation
    return report


def accepted_by_parent(squad: Squad, task_id: str) -> bool:
    """Whether the parent ever recorded accepting the task (its own ``done`` message)."""
    path = squad.squad_dir / ".records" / task_id / "messages.jsonl"
    if not path.exists():
        return False
    return any(
        json.loads(line).get("type") == "done" for line in path.read_text().splitlines() if line
    )

"""The world the ``adapters.pi_rpc`` tests start children in: a stand-in ``pi`` executable
(tests/fakes/fake_pi_executable.py) that records its argv, cwd, environment and system prompt
file, the runtime over it, and a sink that remembers what it heard."""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters.pi_rpc import MAX_RECORD_BYTES, PiRpcChild, PiRpcRuntime
from application.ports import (
    ChildEvent,
    Confinement,
    Exited,
    NewSession,
    SessionChoice,
    SpawnRequest,
)
from tests.fakes import fake_pi_executable as fake
from tests.fakes.isolation import FakeIsolation

FAKE = Path(fake.__file__).resolve()
EXTENSION = "/opt/pi-squad/entrypoints/pi"
SYSTEM_PROMPT = "You are the backend agent.\nscripted-policy: echo\nété ✓\n"
REQUEST_ENV = {"PI_SQUAD_CHILD": "1", "PI_SQUAD_ID": "sq1", "PI_SQUAD_TASK_ID": "t1"}
WAIT = 10.0


class Recorder:
    """A thread-safe sink that remembers which thread called it."""

    def __init__(self) -> None:
        self.events: list[ChildEvent] = []
        self.threads: set[str] = set()
        self._changed = threading.Condition()

    def __call__(self, event: ChildEvent) -> None:
        with self._changed:
            self.events.append(event)
            self.threads.add(threading.current_thread().name)
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[list[ChildEvent]], bool]) -> list[ChildEvent]:
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(self.events), timeout=WAIT):
                raise AssertionError(f"timed out; events so far: {self.events}")
            return list(self.events)

    def until_exit(self) -> list[ChildEvent]:
        return self.wait_for(lambda events: any(isinstance(e, Exited) for e in events))

    def kinds(self) -> list[str]:
        return [type(event).__name__ for event in self.events]


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.record_path = tmp_path / "fake-record.json"
        self.prompts = tmp_path / "prompts"
        self.prompts.mkdir()
        self.cwd = tmp_path / "squad-cwd"
        self.cwd.mkdir()
        self.sessions = tmp_path / "task" / "session"
        self.sessions.mkdir(parents=True)
        self.ids = (f"child-{n}" for n in itertools.count(1))
        self.started: list[PiRpcChild] = []

    def base_env(self, mode: str, **extra: str) -> dict[str, str]:
        return {
            "FAKE_PI_MODE": mode,
            "FAKE_PI_RECORD": str(self.record_path),
            "PYTHONCOERCECLOCALE": "0",  # no LC_CTYPE added by the interpreter
            "BASE_ONLY": "kept",
            "PI_SQUAD_TASK_ID": "overridden by the request",
            **extra,
        }

    def runtime(
        self,
        mode: str,
        *,
        extension: str | None = EXTENSION,
        extra_env: dict[str, str] | None = None,
        startup_timeout: float = 5.0,
        request_timeout: float = 5.0,
        settle_exit_grace: float = 2.0,
        kill_grace: float = 2.0,
        max_record_bytes: int = MAX_RECORD_BYTES,
        isolation: FakeIsolation | None = None,
    ) -> PiRpcRuntime:
        return PiRpcRuntime(
            [sys.executable, str(FAKE)],
            self.base_env(mode, **(extra_env or {})),
            extension,
            provider="fake",
            startup_timeout=startup_timeout,
            request_timeout=request_timeout,
            settle_exit_grace=settle_exit_grace,
            kill_grace=kill_grace,
            max_record_bytes=max_record_bytes,
            temp_dir=str(self.prompts),
            new_child_id=lambda: next(self.ids),
            isolation=isolation,
        )

    def spawn(
        self, runtime: PiRpcRuntime, request: SpawnRequest | None = None
    ) -> tuple[PiRpcChild, Recorder]:
        """Start a child whose events a new ``Recorder`` receives; it is killed at teardown."""
        recorder = Recorder()
        return self.keep(runtime.spawn(request or self.request(), recorder)), recorder

    def keep(self, handle: PiRpcChild) -> PiRpcChild:
        """Kill ``handle`` at teardown (a no-op for one that has exited)."""
        self.started.append(handle)
        return handle

    def request(self, session: SessionChoice | None = None, **fields: Any) -> SpawnRequest:
        values: dict[str, Any] = {
            "squad_id": "sq1",
            "task_id": "t1",
            "cwd": str(self.cwd),
            "session": session or NewSession(str(self.sessions)),
            "system_prompt": SYSTEM_PROMPT,
            "first_prompt": "Do the task.",
            "environment": REQUEST_ENV,
        } | fields
        return SpawnRequest(**values)

    def confined_request(self, squad_root: Path) -> tuple[SpawnRequest, Path]:
        """A request confined to this world's cwd and the task ledger under ``squad_root``
        (created); the ledger's path."""
        ledger = squad_root / "sq1" / "t1"
        ledger.mkdir(parents=True)
        confinement = Confinement(
            squad_root=str(squad_root), ledger_dir=str(ledger), project_dir=str(self.cwd)
        )
        return self.request(confinement=confinement), ledger

    def recorded(self) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while not self.record_path.exists():
            assert time.monotonic() < deadline, "the fake never recorded its start"
            time.sleep(0.01)
        result: dict[str, Any] = json.loads(self.record_path.read_text(encoding="utf-8"))
        return result


def gone(pid: int) -> bool:
    """Reaped: not our child any more (no zombie to wait for) and absent from /proc."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return not Path(f"/proc/{pid}").exists()
    return False

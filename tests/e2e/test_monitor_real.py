"""Issue 13 item 4 with real Pi: a child stuck repeating one ``bash`` call is steered by the
monitor through Pi's own steering, stops looping and finishes; the steer is in the task's
history and on its record."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import MODEL_ID, PROVIDER, ScriptedModelServer, write_models_json
from adapters.scripted_model.policies import ECHO_PREFIX, LOOP_GIVE_UP
from adapters.store.files import FileStore
from adapters.store.lock import FastenersLockFactory
from application.ports import AssistantText, ChildEvent, Exited, Settled
from application.squads.scheduler.advising import advisor_request
from domain.squad.advisor import advice_from, advisor_from_environment
from domain.squad.model import TaskStatus
from entrypoints.children import child_runtime
from entrypoints.concerns.settings import Settings
from tests.builders import task_record
from tests.e2e.real_pi import RealPiWorld, demo_world, run_argv
from tests.host_fs import host_file_system

pytestmark = pytest.mark.realpi
STEERED_AFTER = re.compile(r"Steered by the monitor after (\d+) identical calls")


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    yield from demo_world(RealPiWorld, tmp_path, runtime, policy="looper")


def test_a_looping_child_is_steered_and_finishes(world: RealPiWorld) -> None:
    env = {
        **world.pi_environment(),
        "PI_SQUAD_ROOT": str(world.root),
        "PI_SQUAD_ISOLATION": "none",
        "PI_SQUAD_REPEAT_LIMIT": "3",
    }
    digest = world.stage_demo("looper")
    argv = run_argv(world.project / "demo.spec.json", digest, world.project, "--json")
    done = subprocess.run(
        argv, env=env, cwd=world.project, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["status"] == "review"
    store = FileStore(fs=host_file_system(), locks=FastenersLockFactory(), root=str(world.root))
    snapshot = store.snapshot(summary["squadId"])
    for task_id, task in snapshot.tasks.items():
        texts = [m.text for m in store.messages(summary["squadId"], task_id)]
        assert task.monitor == "steered (repeated_call)", "\n".join([task_id, *texts])
        assert "monitor: steered (repeated_call)" in texts
        # The monitor steers at the 3rd identical call; Pi hands the steer to the model at its
        # next turn boundary, and the scripted model answers at once, so a loaded machine may
        # let a few more calls through first. What matters: the steer reached the child before
        # it gave up looping.
        made = [int(m.group(1)) for t in texts if (m := STEERED_AFTER.search(t))]
        assert made, texts
        assert 3 <= made[0] < LOOP_GIVE_UP, texts


def test_the_advisor_child_runs_on_real_pi_with_no_tools_and_answers(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    """The advisor's own ``SpawnRequest`` on the production child runtime (pi-squad's package
    loaded, ``--no-tools``, ``--provider``/``--model`` from ``PROVIDER/MODEL``): real Pi starts
    it, pi-squad registers nothing in it, it settles with an answer and exits."""
    settings = advisor_from_environment({"PI_SQUAD_ADVISOR_MODEL": f"{PROVIDER}/{MODEL_ID}"})
    assert settings is not None
    task = task_record(
        "design", title="t", description="d", agent="architect", status=TaskStatus.IN_PROGRESS
    )
    (tmp_path / "work").mkdir()
    with ScriptedModelServer("echo") as model:
        write_models_json(tmp_path / "agent", model.base_url)
        # ``runtime`` (the fixture) only skips the test when none is installed: the production
        # runtime locates the same one from this process's environment.
        process_settings = Settings()
        children = child_runtime(
            os.environ,
            agent_dir=str(tmp_path / "agent"),
            provider=None,
            isolation=process_settings.isolation(),
            runtime_override=process_settings.runtime_dir(),
        )
        request = advisor_request(
            "squad-1",
            task,
            cwd=str(tmp_path / "work"),
            session_dir=str(tmp_path / "advisor-session"),
            history=[],
            quiet_seconds=362.0,
            settings=settings,
        )
        events: queue.Queue[ChildEvent] = queue.Queue()
        handle = children.spawn(request, events.put)
        seen: list[ChildEvent] = []
        try:
            while not any(isinstance(e, Exited) for e in seen):
                seen.append(events.get(timeout=60))
        finally:
            handle.kill()
    texts = [e.text for e in seen if isinstance(e, AssistantText)]
    assert any(isinstance(e, Settled) for e in seen), seen
    assert texts, seen
    advice = advice_from(texts[-1])
    assert advice is not None
    assert advice.startswith(ECHO_PREFIX + "Task id: design Agent: architect"), advice
    assert not [e for e in seen if isinstance(e, Exited) and e.unexpected], seen

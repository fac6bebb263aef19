"""Issue 28, children isolated as processes, under real Pi 0.80.10 (docs/architecture.md, "Trust
boundary"). Each test drives ``pi-squad run`` over a squad whose children read the whole spec,
then run one ``bash`` script; what the script could do is what the test judges.

- *A signal to a sibling's Node with signal scoping unavailable.* Landlock below ABI 6 (Linux <
  6.12, emulated with ``PI_SQUAD_TEST_LANDLOCK_ABI=5``) does not scope signals; a child that
  sends SIGUSR1 to a sibling's ``node`` would open its inspector (Node's default) and could run
  code inside the sibling's Pi. In its own PID namespace (bubblewrap) the sibling's pid does
  not exist for the child: ``kill`` fails with ESRCH, the sibling finishes on its own reads,
  and the squad's label says which layers held. Needs bubblewrap and Landlock.
- Without namespaces at ABI 5 (``PI_SQUAD_ISOLATION=landlock``) the same signal lands; Pi's
  ``node --disable-sigusr1`` keeps its inspector shut all the same, the label says
  ``landlock(ABI 5, unscoped signals)``, and ``--require-isolation`` refuses to run there at
  all. Needs Landlock.
- *A root child.* Its ``mknod`` of a block or character device is refused (Landlock never
  grants device creation, and bubblewrap drops every capability). Needs root and Landlock.
- *A detached daemon.* A ``setsid`` process a child starts is dead once its task has settled,
  and once the driver itself is killed. Needs bubblewrap.
- *Private temporary directories.* None outlives its child, and one a crashed driver left
  behind is swept at the next start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.isolation.bwrap import probe_bubblewrap
from adapters.isolation.landlock import probe_landlock
from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.policies import diligent
from adapters.scripted_model.replies import PolicyState, Reply
from entrypoints.concerns.settings import Settings
from tests.e2e.child_squads import (
    ChildSquad,
    bash_after_reading,
    held_until,
    kill_all,
    node_of_task,
    processes_with,
)

pytestmark = pytest.mark.realpi

LANDLOCK = probe_landlock(Settings().isolation().abi_cap)
BWRAP = probe_bubblewrap(os.environ)
needs_landlock = pytest.mark.skipif(
    LANDLOCK.mode != "landlock", reason=f"needs Landlock: {LANDLOCK.reason}"
)
needs_bwrap = pytest.mark.skipif(BWRAP.sandbox is None, reason=f"needs bubblewrap: {BWRAP.reason}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a root child's mknod needs root")
ATTACKER, VICTIM = "attacker", "victim"


def signal_script(victim_pid: int) -> str:
    """What a child with ``bash`` does to a sibling's Node: SIGUSR1, then knocks on the
    inspector's port."""
    return (
        f"PID={victim_pid}\n"
        'echo "visible=$(ls -d /proc/[0-9]* | wc -l)"\n'
        'out=$(kill -USR1 "$PID" 2>&1); echo "kill rc=$? $out"\n'
        "sleep 1\n"
        "if (exec 3<>/dev/tcp/127.0.0.1/9229) 2>/dev/null; then echo inspector=open; "
        "else echo inspector=closed; fi\n"
    )


@pytest.fixture
def signals(tmp_path: Path, runtime: PiRuntime) -> Iterator[tuple[ChildSquad, dict[str, str]]]:
    """``attacker`` signals ``victim``'s node while ``victim`` waits on its model."""
    outputs: dict[str, str] = {}
    attacked = threading.Event()

    def script() -> str:
        deadline = time.monotonic() + 30
        pid = node_of_task(VICTIM)
        while pid is None and time.monotonic() < deadline:
            time.sleep(0.2)
            pid = node_of_task(VICTIM)
        assert pid is not None, "the victim's node never ran"
        return signal_script(pid)

    attacker = bash_after_reading(ATTACKER, script, outputs)

    def reporting(conversation: Conversation, state: PolicyState) -> Reply:
        reply = attacker(conversation, state)
        if ATTACKER in outputs:
            attacked.set()  # the victim may go on
        return reply

    policies = {"attacker": reporting, "held": held_until(attacked, diligent)}
    with ScriptedModelServer("diligent", policies=policies) as model:
        squad = ChildSquad(base=tmp_path, runtime=runtime, model=model)
        squad.write_models()
        squad.write_squad({ATTACKER: "attacker", VICTIM: "held"})
        yield squad, outputs
    attacked.set()


@needs_landlock
@needs_bwrap
def test_namespaces_stop_a_signal_to_a_siblings_node_where_landlock_cannot_scope_it(
    signals: tuple[ChildSquad, dict[str, str]],
) -> None:
    squad, outputs = signals
    code, summary, output = squad.run(PI_SQUAD_TEST_LANDLOCK_ABI="5")
    assert code == 0, output[-3000:]
    attack = outputs[ATTACKER]
    assert "kill rc=1" in attack, attack
    assert "No such process" in attack, "the victim's pid does not exist for the attacker"
    assert "inspector=closed" in attack, attack
    assert squad.spawns(VICTIM) == 1, "the victim's Pi was never stopped"
    assert {t["taskId"]: (t["status"], t["attestation"]) for t in summary["tasks"]} == {
        ATTACKER: ("done", "valid"),
        VICTIM: ("done", "valid"),
    }
    label = "namespaces+landlock(ABI 5, unscoped signals)"
    assert squad.squad_json()["isolationLayers"] == label
    for command in ("verify", "status"):
        isolation = squad.cli_json(command, squad.squad_dir().name)["isolation"]
        assert (isolation["mode"], isolation["layers"]) == ("landlock", label)
        assert f"layers that held for every child: {label}" in isolation["statement"]


@needs_landlock
def test_without_namespaces_at_abi_5_the_signal_lands_and_the_label_says_so(
    signals: tuple[ChildSquad, dict[str, str]],
) -> None:
    squad, outputs = signals
    weak = {"PI_SQUAD_ISOLATION": "landlock", "PI_SQUAD_TEST_LANDLOCK_ABI": "5"}
    refused, _, said = squad.run(**weak, PI_SQUAD_REQUIRE_ISOLATION="1")
    assert refused != 0
    assert "ISOLATION_UNAVAILABLE" in said, said[-2000:]
    assert "cannot scope signals" in said, said[-2000:]
    assert not squad.root.exists() or not any(squad.root.iterdir()), "nothing was published"

    squad.run(**weak)
    attack = outputs[ATTACKER]
    assert "kill rc=0" in attack, attack
    # node --disable-sigusr1: the signal ended the victim's Pi instead of opening its inspector.
    assert "inspector=closed" in attack, attack
    label = "landlock(ABI 5, unscoped signals)"
    isolation = squad.cli_json("verify", squad.squad_dir().name)["isolation"]
    assert (isolation["mode"], isolation["layers"]) == ("landlock", label)
    assert "a child could signal processes outside its own tree" in isolation["statement"]


# -- a root child's devices, a detached daemon, the scratch directories --------------------------


def prober_script(token: str) -> str:
    return (
        'for target in "$PWD/disk" "$TMPDIR/disk"; do\n'
        '  out=$(mknod "$target" b 7 0 2>&1); echo "mknod block rc=$? $out"\n'
        "done\n"
        'out=$(mknod "$PWD/mem" c 1 1 2>&1); echo "mknod char rc=$? $out"\n'
        f'setsid -f bash -c "while :; do echo x >> \\"$PWD/heartbeat-{token}\\"; sleep 0.2; '
        f'done" {token}\n'
        "sleep 0.5; echo daemon started\n"
    )


@pytest.fixture(scope="module")
def probed(
    tmp_path_factory: pytest.TempPathFactory, runtime: PiRuntime
) -> Iterator[tuple[ChildSquad, dict[str, str], str, Path]]:
    """One run of a ``prober`` child; a stale scratch directory, as a driver killed earlier
    would have left it, waits in the driver's temporary directory."""
    token = f"pi-squad-survivor-{uuid.uuid4().hex[:12]}"
    outputs: dict[str, str] = {}
    policies = {"prober": bash_after_reading("prober", lambda: prober_script(token), outputs)}
    with ScriptedModelServer("diligent", policies=policies) as model:
        squad = ChildSquad(base=tmp_path_factory.mktemp("probed"), runtime=runtime, model=model)
        squad.write_models()
        squad.write_squad({"prober": "prober"})
        gone = subprocess.Popen(["true"])
        gone.wait()
        stale = squad.tmp / f"pi-squad-child-{gone.pid}.1-stale0"
        (stale / "agent").mkdir(parents=True)
        (stale / "agent" / "auth.json").write_text("{}")
        code, _, output = squad.run()
        assert code == 0, output[-3000:]
        try:
            yield squad, outputs, token, stale
        finally:
            kill_all(processes_with(token))


@needs_root
@needs_landlock
def test_a_root_childs_mknod_of_a_device_is_refused(
    probed: tuple[ChildSquad, dict[str, str], str, Path],
) -> None:
    squad, outputs, _, _ = probed
    lines = [line for line in outputs["prober"].splitlines() if line.startswith("mknod")]
    assert len(lines) == 3, outputs["prober"]
    for line in lines:
        assert " rc=0 " not in line + " ", line
        assert "Permission denied" in line or "Operation not permitted" in line, line
    assert not (squad.project / "disk").exists()
    assert not (squad.project / "mem").exists()


@needs_bwrap
def test_a_setsid_daemon_started_by_a_child_is_dead_once_its_task_settled(
    probed: tuple[ChildSquad, dict[str, str], str, Path],
) -> None:
    squad, outputs, token, _ = probed
    assert "daemon started" in outputs["prober"]
    heartbeat = squad.project / f"heartbeat-{token}"
    assert heartbeat.exists(), "the daemon ran"
    size = heartbeat.stat().st_size
    time.sleep(1.5)
    assert heartbeat.stat().st_size == size, "the daemon still writes after the run"
    assert processes_with(token) == []


def test_no_private_temporary_directory_outlives_its_child_and_a_stale_one_is_swept(
    probed: tuple[ChildSquad, dict[str, str], str, Path],
) -> None:
    squad, _, _, stale = probed
    assert not stale.exists(), "the crashed driver's directory was swept at the next start"
    assert sorted(p.name for p in squad.tmp.iterdir() if p.name.startswith("pi-squad-child-")) == []


@needs_bwrap
@needs_landlock
def test_killing_the_driver_ends_every_childs_tree_and_its_scratch_is_swept_next_time(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    token = f"pi-squad-survivor-{uuid.uuid4().hex[:12]}"
    script = (
        f'setsid -f bash -c "while :; do echo x >> \\"$PWD/heartbeat-{token}\\"; sleep 0.2; '
        f'done" {token}\nsleep 60\n'
    )
    outputs: dict[str, str] = {}
    policies = {"sleeper": bash_after_reading("sleeper", lambda: script, outputs)}
    with ScriptedModelServer("diligent", policies=policies) as model:
        squad = ChildSquad(base=tmp_path, runtime=runtime, model=model)
        squad.write_models()
        squad.write_squad({"sleeper": "sleeper"})
        heartbeat = squad.project / f"heartbeat-{token}"
        driver = subprocess.Popen(
            squad.run_argv(),
            env=squad.environment(),
            cwd=squad.project,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 90
            while not heartbeat.exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert heartbeat.exists(), "the child started its daemon"
            (left,) = [p for p in squad.tmp.iterdir() if p.name.startswith("pi-squad-child-")]
            assert left.name.startswith(f"pi-squad-child-{driver.pid}.")
            os.kill(driver.pid, signal.SIGKILL)
            driver.wait(timeout=10)
            deadline = time.monotonic() + 15
            while processes_with(token) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert processes_with(token) == [], "the child's tree outlived the driver"
            assert left.exists(), "a killed driver cannot clean up: the next start must"

            squad.write_squad({"sleeper": "diligent"})  # a new squad, quick this time
            code, _, output = squad.run()
            assert code == 0, output[-3000:]
            assert not left.exists(), "swept at the next start"
        finally:
            driver.kill()
            driver.wait()
            kill_all(processes_with(token))

"""The trust boundary through the command line: what ``verify``, ``status`` and ``report`` say of
children that ran without isolation, and commands that fail closed with one coded error."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import attrs
import pytest

from adapters.isolation.landlock import LandlockIsolation, probe_landlock
from domain.squad.model import TaskStatus
from tests.builders import spec_document
from tests.integration.cli_runtime.support import cli, error, ok
from tests.integration.cli_support import CLI, Sandbox, create_arguments, run_cli
from tests.runtime_world import RuntimeWorld


def test_verify_and_status_say_plainly_when_children_ran_without_isolation(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    with world.store.transaction(world.squad_id) as tx:
        tx.put_squad(attrs.evolve(tx.squad, isolation="none"))
    document = ok(cli(sandbox, world, "verify", world.squad_id, "--json"))
    assert document["isolation"]["mode"] == "none"
    assert "a child could have written squad records" in document["isolation"]["statement"]
    text = cli(sandbox, world, "verify", world.squad_id).stdout
    assert "isolation: none: at least one child ran without kernel write isolation" in text
    status = cli(sandbox, world, "status", world.squad_id).stdout
    assert "Isolation: none: at least one child ran without kernel write isolation" in status
    # ``report`` exits 1 here (nothing is attested yet), but says the same in both forms.
    report = cli(sandbox, world, "report", world.squad_id, "--json").json()
    assert report["isolation"]["mode"] == "none"
    assert "a child could have written squad records" in report["isolation"]["statement"]
    markdown = cli(sandbox, world, "report", world.squad_id).stdout
    assert (
        "- Isolation: none: at least one child ran without kernel write isolation, so a child "
        "could have written squad records" in markdown
    )


def test_verify_status_and_report_show_the_weakest_layers_any_child_ran_under(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    weakest = "landlock(ABI 4, unscoped signals)"
    with world.store.transaction(world.squad_id) as tx:
        tx.put_squad(attrs.evolve(tx.squad, isolation="landlock", isolation_layers=weakest))
    said = f"layers that held for every child: {weakest}"
    for args in (("verify",), ("status",), ("report",)):
        document = cli(sandbox, world, *args, world.squad_id, "--json").json()
        assert document["isolation"]["mode"] == "landlock", args
        assert document["isolation"]["layers"] == weakest, args
        assert said in document["isolation"]["statement"], args
    for args, prefix in ((("verify",), "isolation: "), (("status",), "Isolation: "),
                         (("report",), "- Isolation: ")):  # fmt: skip
        text = cli(sandbox, world, *args, world.squad_id).stdout
        (line,) = [line for line in text.splitlines() if line.startswith(prefix)]
        assert said in line, args
        assert "a child could signal processes outside its own tree" in line, args


@pytest.mark.parametrize(
    "arguments",
    [
        ("status", "{squad}"),
        ("verify", "{squad}"),
        ("report", "{squad}"),
        ("modify", "{squad}", "complete_task", "--task-id", "docs"),
        ("modify", "{squad}", "pause"),
        ("run", "--squad", "{squad}"),
    ],
)
def test_a_deleted_pinned_task_fails_every_command_closed_with_one_coded_error(
    sandbox: Sandbox, world: RuntimeWorld, arguments: tuple[str, ...]
) -> None:
    squad_dir = Path(world.root, world.squad_id)
    shutil.rmtree(squad_dir / ".records" / "build")
    argv = [a.format(squad=world.squad_id) for a in arguments]
    message = error(cli(sandbox, world, *argv, "--json"), "SQUAD_INTEGRITY")
    assert "task 'build'" in message
    assert f"pi-squad verify {world.squad_id}" in message, "says what to type next"
    text = cli(sandbox, world, *argv)
    assert text.returncode == 1
    assert text.stderr.startswith("pi-squad: SQUAD_INTEGRITY: ")
    assert "Traceback" not in text.stderr


def test_a_command_the_kernel_refuses_is_one_coded_error_not_a_traceback(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    """What a confined child gets from ``pi-squad modify``: squad records are read-only to it
    (real Landlock; we run as root, so file modes would not refuse anything)."""
    support = probe_landlock()
    if support.mode != "landlock" or support.abi is None:
        pytest.skip(f"no Landlock here: {support.reason}")
    argv = LandlockIsolation(abi=support.abi).confine(
        [*CLI, "modify", world.squad_id, "pause_task", "--task-id", "build", "--json"],
        writable=["/dev/null"],
    )
    completed = subprocess.run(
        argv,
        cwd=sandbox.cwd,
        env=sandbox.environment(root=world.root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    document = json.loads(completed.stdout)
    assert document["error"]["code"] == "IO_FAILED"
    assert "Permission denied" in document["error"]["message"]
    assert world.task("build").status is not TaskStatus.SUSPENDED, "nothing changed"


def test_run_from_a_project_that_holds_the_squad_root_is_refused_before_publishing(
    tmp_path: Path,
) -> None:
    """With Landlock every child may write its project; a project holding the squad root
    would give every child every squad record, so nothing is published at all."""
    support = probe_landlock()
    if support.mode != "landlock":
        pytest.skip(f"no Landlock here: {support.reason}")
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(spec_document())
    root = sandbox.cwd / ".pi" / "squad"  # inside the project
    arguments = ["run", *create_arguments(spec)[1:], "--cwd", str(sandbox.cwd)]
    run = run_cli(sandbox, arguments, root=str(root))
    message = error(run, "ISOLATION_UNSAFE")
    assert message.startswith("nothing was published: the write grant")
    assert "contains the squad root" in message
    assert not root.exists() or list(root.iterdir()) == []

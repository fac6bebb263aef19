"""A reader that stops reading ends ``pi-squad`` quietly with status 0 (as ``git`` and ``ls``
do), and ``verify`` and ``report`` without an id take the newest squad, as ``status`` does."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from tests.integration.cli_runtime.support import cli, ok
from tests.integration.cli_support import CLI, Sandbox, run_command
from tests.integration.ops_support import publish_legacy
from tests.runtime_world import RuntimeWorld


def test_status_piped_into_head_exits_0_with_no_error_text(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    pipeline = f"set -o pipefail; {shlex.join(CLI)} status | head -1"
    run = run_command(
        ["bash", "-c", pipeline], cwd=sandbox.cwd, env=sandbox.environment(root=world.root)
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == f"Squad: {world.squad_id}\n"


@pytest.mark.parametrize(
    "arguments",
    [["status"], ["status", "--json"], ["verify"], ["report"], ["report", "--format", "json"]],
)
def test_a_reader_gone_before_the_first_line_ends_the_command_quietly(
    sandbox: Sandbox, world: RuntimeWorld, arguments: list[str]
) -> None:
    """The reader closes its end before the command writes anything: every write is EPIPE
    (the old answer was ``IO_FAILED ... check the permissions and free space``, status 1)."""
    process = subprocess.Popen(
        [*CLI, *arguments],
        cwd=sandbox.cwd,
        env=sandbox.environment(root=world.root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()
    errors = process.stderr.read().decode()
    assert (process.wait(timeout=60), errors) == (0, "")


def test_verify_without_an_id_audits_the_newest_squad(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    legacy = publish_legacy(world)  # created earlier than the file squad
    document = ok(cli(sandbox, world, "verify", "--json"))
    assert document["squadId"] == world.squad_id != legacy
    assert cli(sandbox, world, "verify").stdout.startswith(f"squad {world.squad_id}: ")


def test_report_without_an_id_reports_on_the_newest_squad(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    legacy = publish_legacy(world)
    run = cli(sandbox, world, "report", "--format", "json")
    assert run.json()["squadId"] == world.squad_id != legacy
    markdown = cli(sandbox, world, "report")
    assert markdown.stdout.startswith(f"# Evidence report: squad {world.squad_id}\n")

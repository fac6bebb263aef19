"""Issue 31 item 4 in a real interactive Pi (pexpect + pyte, the scripted model): a squad that
``pi-squad run`` left in review is reviewed by a person through ``/squad review``'s dialog, one
question at a time (the main Pi's scripted model only echoes, it never reviews); the review is
recorded, and ``pi-squad verify`` and ``pi-squad report`` agree with what was answered. The
dialog on fakes, every refusal and Esc: ``tests/integration/main_role/test_review_dialog.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from tests.e2e.real_pi import DEMO_SPEC, RealPiWorld, demo_world, isolation_settings
from tests.e2e.test_squad_command_terminal import interactive_pi

pytestmark = pytest.mark.realpi
RUN_TIMEOUT = 180.0
# Pi's editor dialog: Enter submits; a backslash before Enter is a new line instead.
NEW_LINE = "\\\r"


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[RealPiWorld]:
    yield from demo_world(RealPiWorld, tmp_path, runtime)


def squad_in_review(world: RealPiWorld) -> str:
    """The demo squad run headless by ``pi-squad run`` to its review gate; its id."""
    (world.base / "home").mkdir(exist_ok=True)
    env = world.user_environment() | isolation_settings("none")
    done = world.run_squad(world.project / DEMO_SPEC, env, RUN_TIMEOUT)
    assert done.returncode == 0, f"{done.summary} {done.stderr[-2000:]}"
    assert done.summary["status"] == "review", done.summary
    squad_id: str = done.summary["squadId"]
    return squad_id


def test_a_person_reviews_through_the_dialog_and_verify_and_report_agree(
    world: RealPiWorld,
) -> None:
    squad_id = squad_in_review(world)
    terminal = interactive_pi(world)
    try:
        terminal.wait_for("fake-model", timeout=60)
        terminal.type("/squad review\r")
        terminal.wait_for("verdict: your verdict", timeout=30)
        terminal.type("\r")  # the first choice: pass
        terminal.wait_for("contract checks: one line per", timeout=30)
        terminal.type(f"every task attested{NEW_LINE}the demo's contract holds\r")
        terminal.wait_for("diff review: what the diff changes", timeout=30)
        terminal.type("read the whole diff\r")
        terminal.wait_for("verification evidence: one line per", timeout=30)
        terminal.type("pi-squad verify: PASS\r")
        terminal.wait_for("integration evidence: how the work fits", timeout=30)
        terminal.type("ran the demo end to end\r")
        terminal.wait_for("issues: one per line", timeout=30)
        terminal.type("\r")
        terminal.wait_for(f"Review recorded (pass) for squad '{squad_id}'", timeout=30)
    finally:
        terminal.close()

    verified = world.cli("verify", squad_id, "--json")
    assert verified.returncode == 0, verified.stderr
    audit = json.loads(verified.stdout)
    assert audit["squad"] == {"status": "done", "review": "passed"}
    assert audit["audit"]["passed"] is True
    reported = world.cli("report", squad_id, "--json")
    assert reported.returncode == 0, reported.stderr
    review = json.loads(reported.stdout)["reviews"][-1]
    assert review["status"] == "passed"
    assert review["verdict"] == "pass"
    assert review["contractChecks"] == ["every task attested", "the demo's contract holds"]
    assert review["diffReview"] == "read the whole diff"
    assert review["verificationEvidence"] == ["pi-squad verify: PASS"]
    assert review["integrationEvidence"] == "ran the demo end to end"
    assert review["issues"] == []

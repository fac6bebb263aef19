"""A flow's ``checkpoint`` in a real interactive Pi 0.80.10 (docs/flows.md, "Checkpoint and
reflexion"): the scripted model calls ``flow`` with a checkpoint before spawn, Pi shows the
question in its own confirm dialog (the one a project agent's approval uses), the person picks
"No" with the keyboard, and the call is refused ``CHECKPOINT_APPROVAL_DENIED`` with no child
ever spawned."""

from __future__ import annotations

import pytest

from tests.e2e.flow_faces.support import WHY, FacesWorld, children_of, flow_terminal

pytestmark = pytest.mark.realpi

DOWN = "\x1b[B"


def test_a_checkpoint_declined_in_the_terminal_refuses_the_call_before_any_child(
    world: FacesWorld,
) -> None:
    arguments = {
        "agent": "researcher",
        "task": "scripted-policy: echo\nNEVER-SPAWNED",
        "why": WHY,
        "checkpoint": {"before": "spawn", "message": "CHECKPOINT-E2E: this costs money."},
    }
    terminal = flow_terminal(world, arguments)
    try:
        terminal.type("Run the flow.\r")
        screen = terminal.wait_for("CHECKPOINT-E2E: this costs money.", timeout=120)
        assert "pi-squad flow: checkpoint" in screen
        assert "about to spawn its children (researcher)" in screen
        assert children_of(world) == []
        terminal.child.send(DOWN)  # one write: a lone ESC would cancel the dialog
        terminal.type("\r")
        screen = terminal.wait_for("CHECKPOINT_APPROVAL_DENIED", timeout=60)
        assert "nothing was spawned" in screen
    finally:
        terminal.close()
    assert children_of(world) == []
    assert not (world.root / ".flows").exists()

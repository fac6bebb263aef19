"""``bash-ro`` on fakes: refused where the runtime cannot confine; where it can, the child gets
``bash`` under a confinement that grants writes only to its own session directory."""

from __future__ import annotations

from pathlib import Path

from application.ports import Confinement, IsolationSupport, NewSession
from domain.errors import ErrorCode
from tests.unit.application.test_flow_engine import WHY, Engine

LANDLOCK = IsolationSupport(mode="landlock", abi=7, reason=None)
CALL = {"agent": "researcher", "task": "t", "why": WHY, "tools": "read,grep,bash-ro"}


def test_bash_ro_without_kernel_isolation_is_refused_before_spawn(tmp_path: Path) -> None:
    error = Engine(tmp_path).refuse(CALL)
    assert error.code is ErrorCode.BASH_READONLY_UNENFORCEABLE
    assert "no isolation configured" in error.message


def test_bash_ro_runs_bash_confined_to_its_session_directory(tmp_path: Path) -> None:
    engine = Engine(tmp_path, isolation=LANDLOCK)
    engine.run(CALL)
    (child,) = engine.scripted.runtime.spawned
    assert child.request.tools == ("read", "grep", "bash")
    session = child.request.session
    assert isinstance(session, NewSession)
    assert child.request.confinement == Confinement(
        str(engine.root), session.session_dir, session.session_dir
    )


def test_plain_bash_is_not_confined(tmp_path: Path) -> None:
    engine = Engine(tmp_path, isolation=LANDLOCK)
    engine.run({**CALL, "tools": "read,bash-ro,bash"})
    (child,) = engine.scripted.runtime.spawned
    assert child.request.tools == ("read", "bash")
    assert child.request.confinement is None


def test_bash_ro_roles_are_not_writers_for_the_shared_write_guard(tmp_path: Path) -> None:
    engine = Engine(tmp_path, isolation=LANDLOCK)
    tasks = [{"agent": "researcher", "task": f"t{i}", "tools": "bash-ro"} for i in range(2)]
    engine.run({"tasks": tasks, "why": WHY})
    assert len(engine.scripted.runtime.spawned) == 2

"""``bash-ro`` on fakes: the child is told it is read-only through its spawn environment (its
bridge then screens every bash call); where the runtime has Landlock it is also confined to its
session directory. Refused only where neither layer exists; each run says how it was enforced."""

from __future__ import annotations

from pathlib import Path

from application.ports import Confinement, IsolationSupport, NewSession
from domain.child_environment import BASH_READONLY, CHILD_FLAG
from domain.errors import ErrorCode
from tests.fakes.tracing import FakeTraceSinks
from tests.unit.application.flows.engine import WHY, Engine, flow_settings

LANDLOCK = IsolationSupport(mode="landlock", abi=7, reason=None)
CALL = {"agent": "researcher", "task": "t", "why": WHY, "tools": "read,grep,bash-ro"}


def test_bash_ro_with_neither_sandbox_nor_allowlist_is_refused_before_spawn(
    tmp_path: Path,
) -> None:
    error = Engine(tmp_path).refuse(CALL)
    assert error.code is ErrorCode.BASH_READONLY_UNENFORCEABLE
    assert "no isolation configured" in error.message


def test_bash_ro_without_landlock_runs_under_the_allowlist_alone(tmp_path: Path) -> None:
    engine = Engine(tmp_path, bash_ro_allowlist=True)
    document = engine.run(CALL).document()
    (child,) = engine.scripted.runtime.spawned
    assert child.request.tools == ("read", "grep", "bash")
    assert child.request.environment == {CHILD_FLAG: "1", BASH_READONLY: "1"}
    assert child.request.confinement is None
    assert document["results"][0]["enforcement"] == "allowlist"


def test_bash_ro_runs_bash_confined_to_its_session_directory(tmp_path: Path) -> None:
    engine = Engine(tmp_path, isolation=LANDLOCK, bash_ro_allowlist=True)
    document = engine.run(CALL).document()
    (child,) = engine.scripted.runtime.spawned
    assert child.request.tools == ("read", "grep", "bash")
    assert child.request.environment == {CHILD_FLAG: "1", BASH_READONLY: "1"}
    session = child.request.session
    assert isinstance(session, NewSession)
    assert child.request.confinement == Confinement(
        str(engine.root), session.session_dir, session.session_dir
    )
    assert document["results"][0]["enforcement"] == "sandbox+allowlist"


def test_landlock_without_the_extension_is_the_sandbox_alone(tmp_path: Path) -> None:
    engine = Engine(tmp_path, isolation=LANDLOCK)
    document = engine.run(CALL).document()
    assert engine.scripted.runtime.spawned[0].request.confinement is not None
    assert document["results"][0]["enforcement"] == "sandbox"


def test_plain_bash_is_not_confined_nor_screened(tmp_path: Path) -> None:
    engine = Engine(tmp_path, isolation=LANDLOCK, bash_ro_allowlist=True)
    document = engine.run({**CALL, "tools": "read,bash-ro,bash"}).document()
    (child,) = engine.scripted.runtime.spawned
    assert child.request.tools == ("read", "bash")
    assert child.request.confinement is None
    assert child.request.environment == {CHILD_FLAG: "1"}
    assert "enforcement" not in document["results"][0]


def test_bash_ro_roles_are_not_writers_for_the_shared_write_guard(tmp_path: Path) -> None:
    engine = Engine(tmp_path, isolation=LANDLOCK, bash_ro_allowlist=True)
    tasks = [{"agent": "researcher", "task": f"t{i}", "tools": "bash-ro"} for i in range(2)]
    engine.run({"tasks": tasks, "why": WHY, "tier": "capable"})
    assert len(engine.scripted.runtime.spawned) == 2


def test_no_sandbox_switch_leaves_the_allowlist_alone(tmp_path: Path) -> None:
    engine = Engine(
        tmp_path,
        isolation=LANDLOCK,
        bash_ro_allowlist=True,
        flow_settings=flow_settings({"PI_FLOWS_BASH_RO_NO_SANDBOX": "1"}),
    )
    document = engine.run(CALL).document()
    assert engine.scripted.runtime.spawned[0].request.confinement is None
    assert document["results"][0]["enforcement"] == "allowlist"


def test_require_sandbox_switch_refuses_the_allowlist_alone(tmp_path: Path) -> None:
    required = flow_settings({"PI_FLOWS_BASH_RO_REQUIRE_SANDBOX": "1"})
    engine = Engine(tmp_path, bash_ro_allowlist=True, flow_settings=required)
    error = engine.refuse(CALL)
    assert error.code is ErrorCode.BASH_READONLY_UNENFORCEABLE
    assert "PI_FLOWS_BASH_RO_REQUIRE_SANDBOX=1 requires the kernel sandbox" in error.message
    # Where Landlock is, the requirement is met.
    engine = Engine(
        tmp_path / "ok", isolation=LANDLOCK, bash_ro_allowlist=True, flow_settings=required
    )
    assert engine.run(CALL).document()["results"][0]["enforcement"] == "sandbox+allowlist"


def test_a_switch_with_another_value_is_refused_naming_it(tmp_path: Path) -> None:
    engine = Engine(
        tmp_path,
        bash_ro_allowlist=True,
        flow_settings=flow_settings({"PI_FLOWS_BASH_RO_NO_SANDBOX": "yes"}),
    )
    error = engine.refuse(CALL).document()
    assert (error["code"], error["path"], error["measured"]) == (
        "FLOW_INVALID",
        "env.PI_FLOWS_BASH_RO_NO_SANDBOX",
        "yes",
    )


def test_the_child_span_says_how_bash_ro_was_enforced(tmp_path: Path) -> None:
    sinks = FakeTraceSinks()
    engine = Engine(tmp_path, isolation=LANDLOCK, bash_ro_allowlist=True, trace_sinks=sinks)
    engine.run({**CALL, "traceFile": "t.jsonl"})
    (child,) = sinks.last.by_role("child")
    assert child.attributes["flow.bash_ro.enforcement"] == "sandbox+allowlist"
    plain = Engine(tmp_path / "plain", trace_sinks=sinks)
    plain.run({**CALL, "tools": "read,grep", "traceFile": "t.jsonl"})
    (child,) = sinks.last.by_role("child")
    assert "flow.bash_ro.enforcement" not in child.attributes

"""Provider-error grace on fakes and a fake clock (nothing sleeps): a child whose provider
failed and that then stalls is stopped once ``PI_FLOWS_ERROR_GRACE_MS`` has passed on the
clock, long before ``timeoutMs``; one that recovers runs on; one that settles on the error
fails with it. ``PI_FLOWS_ERROR_GRACE_MS`` is validated like any input."""

from __future__ import annotations

from pathlib import Path

import pytest

from application.ports import ProviderError, ProviderRecovery
from domain.flows.child_limits import Stop, error_grace_ms, next_stop
from domain.flows.errors import FlowError
from tests.fakes.child_runtime import FakeChild
from tests.unit.application.flows.engine import WHY, Engine, flow_settings

HOUR_MS = 3_600_000
CALL = {"agent": "researcher", "task": "t", "why": WHY, "timeoutMs": HOUR_MS}
SECRET_ERROR = "401 invalid x-api-key sk-" + "a" * 30


def _fail(child: FakeChild, message: str = SECRET_ERROR) -> None:
    child.say("")  # the failed response is an assistant message without text
    child.sink(ProviderError(child.task_id, child.child_id, message))


def test_a_stalled_child_is_stopped_after_the_grace_with_the_redacted_provider_error(
    tmp_path: Path,
) -> None:
    engine = Engine(tmp_path)

    def script(child: FakeChild) -> None:
        _fail(child)
        engine.clock.advance(30)  # the default grace, far below the hour of timeoutMs

    engine.scripted.default = script
    document = engine.run(CALL).document()
    (child,) = engine.scripted.runtime.spawned
    assert child.killed
    (result,) = document["results"]
    assert result["status"] == "failed"
    assert result["error"]["code"] == "CHILD_PROVIDER_ERROR"
    assert "401 invalid x-api-key [REDACTED:api-key]" in result["error"]["message"]
    assert result["durationMs"] == 30_000


def test_a_child_that_recovers_from_a_provider_error_runs_on(tmp_path: Path) -> None:
    engine = Engine(tmp_path)

    def script(child: FakeChild) -> None:
        _fail(child, "529 overloaded")
        child.sink(ProviderRecovery(child.task_id, child.child_id, "retry"))
        engine.clock.advance(120)  # past the grace, but Pi is retrying
        child.say("the answer")
        child.settle()

    engine.scripted.default = script
    document = engine.run(CALL).document()
    assert not engine.scripted.runtime.spawned[0].killed
    assert document["results"][0]["status"] == "completed"
    assert document["results"][0]["output"] == "the answer"


def test_a_later_answer_also_ends_the_grace(tmp_path: Path) -> None:
    engine = Engine(tmp_path)

    def script(child: FakeChild) -> None:
        _fail(child, "500 internal")
        child.say("recovered")
        engine.clock.advance(120)
        child.settle()

    engine.scripted.default = script
    assert engine.run(CALL).document()["results"][0]["output"] == "recovered"


def test_a_child_that_settles_on_its_provider_error_fails_with_it(tmp_path: Path) -> None:
    engine = Engine(tmp_path)

    def script(child: FakeChild) -> None:
        _fail(child, "400 prompt is too long")
        child.settle()

    engine.scripted.default = script
    document = engine.run(CALL).document()
    assert not engine.scripted.runtime.spawned[0].killed
    error = document["results"][0]["error"]
    assert error["code"] == "CHILD_PROVIDER_ERROR"
    assert error["message"].endswith("400 prompt is too long")


def test_the_grace_comes_from_pi_flows_error_grace_ms(tmp_path: Path) -> None:
    engine = Engine(tmp_path, flow_settings=flow_settings({"PI_FLOWS_ERROR_GRACE_MS": "5000"}))

    def script(child: FakeChild) -> None:
        _fail(child)
        engine.clock.advance(5)

    engine.scripted.default = script
    document = engine.run(CALL).document()
    assert document["results"][0]["error"]["code"] == "CHILD_PROVIDER_ERROR"
    assert document["results"][0]["durationMs"] == 5000
    shown = engine.run({"showConfig": True}).document()["config"]
    assert shown["errorGraceMs"] == 5000


@pytest.mark.parametrize("value", ["abc", "-5", "1.5", "999", "86400001", "３０"])
def test_a_bad_grace_value_is_refused_naming_the_variable_before_any_spawn(
    tmp_path: Path, value: str
) -> None:
    engine = Engine(tmp_path, flow_settings=flow_settings({"PI_FLOWS_ERROR_GRACE_MS": value}))
    error = engine.refuse(CALL).document()
    assert error["code"] == "FLOW_INVALID"
    assert error["path"] == "env.PI_FLOWS_ERROR_GRACE_MS"
    assert "PI_FLOWS_ERROR_GRACE_MS" in error["message"]
    assert error["measured"] == value
    assert error["allowed"] == {"minimum": 1000, "maximum": 86_400_000}


def test_the_grace_defaults_to_thirty_seconds() -> None:
    assert error_grace_ms("") == 30_000
    assert error_grace_ms(" ") == 30_000
    assert error_grace_ms("1000") == 1000
    with pytest.raises(FlowError):
        error_grace_ms("0")


@pytest.mark.parametrize(
    ("deadline", "error_at", "expected"),
    [
        (100.0, None, (100.0, Stop.TIMEOUT)),
        (100.0, 10.0, (40.0, Stop.PROVIDER_ERROR)),
        (100.0, 70.0, (100.0, Stop.PROVIDER_ERROR)),  # a tie names the provider error
        (100.0, 71.0, (100.0, Stop.TIMEOUT)),  # timeoutMs still bounds a late error
    ],
)
def test_the_earlier_of_the_timeout_and_the_grace_stops_the_child(
    deadline: float, error_at: float | None, expected: tuple[float, Stop]
) -> None:
    assert next_stop(deadline, error_at, 30.0) == expected

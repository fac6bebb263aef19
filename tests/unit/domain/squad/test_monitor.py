"""The monitor's rules for one child, on a clock the test turns."""

from __future__ import annotations

import pytest

from domain.errors import PiSquadError
from domain.squad.monitor import (
    DEFAULT_CEILING_SECONDS,
    DEFAULT_MESSAGE_BYTES,
    STEER_PREFIX,
    MonitorMove,
    MonitorPolicy,
    MonitorReason,
    next_deadline,
    on_call,
    on_event,
    on_output,
    on_tick,
    policy_from_environment,
    watch_started,
)

POLICY = MonitorPolicy(repeat_limit=5, idle_steer=180.0, idle_escalate=360.0, ceiling=600.0)


def test_the_fifth_identical_call_in_a_row_is_steered_once() -> None:
    watch = watch_started(0.0)
    actions = []
    for n in range(8):
        watch, action = on_call(watch, "bash", {"command": "ls", "timeout": 5}, float(n), POLICY)
        actions.append(action)
    assert [a is not None for a in actions] == [False] * 4 + [True] + [False] * 3
    steer = actions[4]
    assert steer is not None
    assert steer.move is MonitorMove.STEER
    assert steer.reason is MonitorReason.REPEATED_CALL
    assert steer.text.startswith(STEER_PREFIX)


def test_argument_order_does_not_hide_a_repeat_and_a_different_call_resets_it() -> None:
    watch = watch_started(0.0)
    for n in range(4):
        arguments = {"a": 1, "b": 2} if n % 2 else {"b": 2, "a": 1}
        watch, action = on_call(watch, "read", arguments, 0.0, POLICY)
        assert action is None
    watch, action = on_call(watch, "read", {"a": 1, "b": 3}, 0.0, POLICY)
    assert action is None
    assert watch.repeats == 1
    for _ in range(4):
        watch, action = on_call(watch, "read", {"a": 1, "b": 3}, 0.0, POLICY)
    assert action is not None, "a new run of repeats is steered again"


def test_quiet_is_steered_then_escalated_and_any_event_resets_it() -> None:
    watch = watch_started(0.0)
    watch, action = on_tick(watch, 179.0, POLICY)
    assert action is None
    watch, action = on_tick(watch, 180.0, POLICY)
    assert action is not None
    assert (action.move, action.reason) == (MonitorMove.STEER, MonitorReason.IDLE)
    watch, action = on_tick(watch, 200.0, POLICY)
    assert action is None, "steered once"
    watch, action = on_tick(watch, 360.0, POLICY)
    assert action is not None
    assert (action.move, action.reason) == (MonitorMove.ESCALATE, MonitorReason.IDLE_ESCALATION)
    watch = on_event(watch, 361.0)
    watch, action = on_tick(watch, 500.0, POLICY)
    assert action is None, "heard from again: quiet counts from the last event"


def test_the_ceiling_stops_the_child_once_and_wins_over_quiet() -> None:
    watch = watch_started(0.0)
    watch, action = on_tick(watch, 600.0, POLICY)
    assert action is not None
    assert (action.move, action.reason) == (MonitorMove.STOP, MonitorReason.CEILING)
    assert "PI_SQUAD_CEILING_MS" in action.text
    assert on_tick(watch, 700.0, POLICY)[1] is None


def test_a_message_streamed_past_its_bound_stops_the_child_once() -> None:
    policy = MonitorPolicy(message_bytes=1000)
    watch = watch_started(0.0)
    watch, action = on_output(watch, 1000, 5.0, policy)
    assert action is None  # at the bound: still allowed
    assert watch.last_event_at == 5.0  # streaming is not quiet
    watch, action = on_output(watch, 1001, 6.0, policy)
    assert action is not None
    assert (action.move, action.reason) == (MonitorMove.STOP, MonitorReason.MESSAGE_SIZE)
    assert "1001 bytes" in action.text
    assert "over the 1000 allowed (PI_SQUAD_MAX_MESSAGE_BYTES" in action.text
    assert on_output(watch, 5000, 7.0, policy)[1] is None


def test_one_message_has_a_hard_size_bound_by_default() -> None:
    assert MonitorPolicy().message_bytes == DEFAULT_MESSAGE_BYTES == 256 * 1024
    assert policy_from_environment({"PI_SQUAD_MAX_MESSAGE_BYTES": "4096"}).message_bytes == 4096


def test_the_policy_comes_from_the_environment_in_milliseconds() -> None:
    policy = policy_from_environment(
        {
            "PI_SQUAD_CEILING_MS": "90000",
            "PI_SQUAD_IDLE_STEER_MS": "1000",
            "PI_SQUAD_REPEAT_LIMIT": "3",
        }
    )
    assert policy == MonitorPolicy(
        repeat_limit=3, idle_steer=1.0, idle_escalate=360.0, ceiling=90.0
    )
    assert policy_from_environment({}) == MonitorPolicy()


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"PI_SQUAD_CEILING_MS": "soon"}, "PI_SQUAD_CEILING_MS is 'soon'"),
        ({"PI_SQUAD_IDLE_STEER_MS": "-5"}, "PI_SQUAD_IDLE_STEER_MS is '-5'"),
        ({"PI_SQUAD_IDLE_STEER_MS": "500000"}, "PI_SQUAD_IDLE_ESCALATE_MS"),
        ({"PI_SQUAD_REPEAT_LIMIT": "1"}, "PI_SQUAD_REPEAT_LIMIT >= 2"),
        ({"PI_SQUAD_MAX_MESSAGE_BYTES": "1MB"}, "PI_SQUAD_MAX_MESSAGE_BYTES is '1MB'"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_variable(environ: dict[str, str], named: str) -> None:
    with pytest.raises(PiSquadError) as refused:
        policy_from_environment(environ)
    assert named in refused.value.message


def test_the_next_deadline_is_when_on_tick_would_act_first() -> None:
    watch = watch_started(100.0)
    assert next_deadline(watch, POLICY) == 280.0, "the idle steer before the ceiling"
    assert on_tick(watch, 279.9, POLICY)[1] is None
    watch, action = on_tick(watch, 280.0, POLICY)
    assert action is not None
    assert action.move is MonitorMove.STEER
    assert next_deadline(watch, POLICY) == 460.0, "then the escalation"
    watch, action = on_tick(watch, 460.0, POLICY)
    assert action is not None
    assert action.move is MonitorMove.ESCALATE
    assert next_deadline(watch, POLICY) == 700.0, "then only the ceiling"
    watch, action = on_tick(watch, 700.0, POLICY)
    assert action is not None
    assert action.move is MonitorMove.STOP
    assert next_deadline(watch, POLICY) is None


def test_an_event_moves_the_next_deadline_and_no_ceiling_means_none_after_escalation() -> None:
    policy = MonitorPolicy(repeat_limit=5, idle_steer=10.0, idle_escalate=20.0, ceiling=None)
    watch = on_event(watch_started(0.0), 7.0)
    assert next_deadline(watch, policy) == 17.0
    watch, _ = on_tick(watch, 27.0, policy)
    assert watch.idle_stage == 2
    assert next_deadline(watch, policy) is None
    default = MonitorPolicy(repeat_limit=5, idle_steer=10.0, idle_escalate=20.0)
    assert next_deadline(watch, default) == DEFAULT_CEILING_SECONDS, "the default ceiling"


def test_one_childs_runtime_has_a_hard_bound_by_default() -> None:
    """Unset, ``PI_SQUAD_CEILING_MS`` still bounds a child: ten hours, as a flow child's
    timeout; the reason names the setting and its default."""
    policy = policy_from_environment({})
    assert policy.ceiling == DEFAULT_CEILING_SECONDS == 36_000.0
    watch = watch_started(0.0)
    assert next_deadline(on_tick(watch, 200.0, policy)[0], policy) is not None
    for now in range(0, 36_000, 3_000):
        watch = on_event(watch, float(now))
        assert on_tick(watch, float(now), policy)[1] is None
    watch, action = on_tick(on_event(watch, 35_999.0), 36_000.0, policy)
    assert action is not None
    assert (action.move, action.reason) == (MonitorMove.STOP, MonitorReason.CEILING)
    assert "PI_SQUAD_CEILING_MS, default 36000000" in action.text

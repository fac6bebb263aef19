"""A publication's independent durable steps: run at once, every one ended before the caller
goes on, the first failure in the given order reported with its step's name."""

from __future__ import annotations

import threading
import time

import pytest

from application.concurrent_steps import StepFailed, run_steps


def test_the_steps_run_at_once() -> None:
    together = threading.Barrier(3, timeout=10)  # the timeout is a hang guard only

    def meet() -> None:
        together.wait()  # every step waits here for the other two: none runs after another

    run_steps([(f"step {n}", meet) for n in range(3)])


def test_a_failure_is_raised_only_once_every_step_ended() -> None:
    ended: list[str] = []

    def slow() -> None:
        time.sleep(0.05)
        ended.append("slow")

    def failing() -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(StepFailed) as failed:
        run_steps([("task state", failing), ("squad state", slow)])
    assert failed.value.step == "task state"
    assert isinstance(failed.value.error, OSError)
    assert ended == ["slow"], "no step is still running when the caller cleans up"


def test_the_first_failure_in_the_given_order_is_reported() -> None:
    def fail(name: str) -> None:
        raise OSError(5, name)

    with pytest.raises(StepFailed) as failed:
        run_steps([("canonical spec", lambda: fail("a")), ("task state", lambda: fail("b"))])
    assert failed.value.step == "canonical spec"


def test_a_single_step_runs_on_the_caller_s_thread() -> None:
    threads: list[threading.Thread] = []
    run_steps([("directory sync", lambda: threads.append(threading.current_thread()))])
    assert threads == [threading.current_thread()]

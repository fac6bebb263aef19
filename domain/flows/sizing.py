"""``PARALLEL_SIZING_REQUIRED``: a parallel fan-out sizes every child explicitly.

pi-flows' admission rule: with two or more tasks, every task sets ``tier`` or ``model``, or the
call sets a flow-wide ``tier`` or ``model``; ``thinking`` alone sizes nothing (it sets effort,
not which model runs). Checked before any spawn; every unsized task is named.
"""

from __future__ import annotations

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.errors import FlowError, Problem


def check_parallel_sizing(call: FlowCall) -> None:
    if call.mode is not Mode.PARALLEL or len(call.tasks) < 2:
        return
    if call.tier is not None or call.model is not None:
        return
    problems = tuple(
        Problem(
            ErrorCode.PARALLEL_SIZING_REQUIRED,
            f"$.tasks[{index}]",
            "sets neither tier nor model, and the call sets no flow-wide tier or model"
            + (" (thinking alone does not size a child)" if task.thinking is not None else ""),
            "thinking only" if task.thinking is not None else "no tier, no model",
            ["tier", "model"],
        )
        for index, task in enumerate(call.tasks)
        if task.tier is None and task.model is None
    )
    if problems:
        raise FlowError(problems)

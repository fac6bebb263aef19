"""The spawning modes as strategies over one dispatch seam (``domain.flows.runs.Dispatch``).

A strategy decides what runs, in which order, and what each child is told; it never spawns,
waits or measures: the dispatch it is given does (``application.flows.dispatch``), under the
call's bounds. Parts 2 and 3 add modes here, as more functions of the same shape.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping

import attrs

from domain.flows.call import FlowCall, FlowTask, Mode
from domain.flows.graph import waves
from domain.flows.runs import ChildJob, Dispatch, RunResult, RunStatus, untrusted_block


class FlowStatus(enum.StrEnum):
    COMPLETED = "completed"
    # Some runs succeeded, some did not (parallel, graph).
    PARTIAL = "partial"
    FAILED = "failed"
    # Stopped by the caller (Ctrl+C): the results are the runs that settled before it.
    CANCELLED = "cancelled"


@attrs.frozen
class FlowOutcome:
    """The settled flow: every run in the order the mode defines, the flow's status, the text
    the caller reads (``output``: the last step, the single run, or each task's section)."""

    mode: Mode
    status: FlowStatus
    results: tuple[RunResult, ...]
    summary: str


def _status(results: tuple[RunResult, ...]) -> FlowStatus:
    succeeded = sum(result.ok for result in results)
    if succeeded == len(results):
        return FlowStatus.COMPLETED
    return FlowStatus.PARTIAL if succeeded else FlowStatus.FAILED


def run_single(call: FlowCall, dispatch: Dispatch) -> FlowOutcome:
    (_path, role), *_ = call.roles()
    results = dispatch([ChildJob("single", role, role.task, stage="single")])
    result = results[0]
    state = "completed" if result.ok else f"failed ({result.error_code})"
    return FlowOutcome(Mode.SINGLE, _status(results), results, f"Flow single: {state}.")


def run_parallel(call: FlowCall, dispatch: Dispatch) -> FlowOutcome:
    """Every task at once, fan-out bounded by the dispatcher; a failed task cancels no
    sibling. No data passes between tasks."""
    jobs = [
        ChildJob(f"task-{i}", task, task.task, stage="fan-out") for i, task in enumerate(call.tasks)
    ]
    results = dispatch(jobs)
    succeeded = sum(result.ok for result in results)
    return FlowOutcome(
        Mode.PARALLEL,
        _status(results),
        results,
        f"Flow parallel: {succeeded}/{len(results)} succeeded.",
    )


def render(template: str, values: Mapping[str, str]) -> tuple[str, frozenset[str]]:
    """``template`` with each ``{name}`` of ``values`` replaced, in one pass (a value's own
    text is never re-scanned for placeholders); also the names that were used."""
    used: set[str] = set()
    out: list[str] = []
    index = 0
    while index < len(template):
        start = template.find("{", index)
        if start < 0:
            out.append(template[index:])
            break
        end = template.find("}", start)
        name = template[start + 1 : end] if end > start else None
        if name is not None and name in values:
            out.append(template[index:start])
            out.append(values[name])
            used.add(name)
            index = end + 1
        else:
            out.append(template[index : start + 1])
            index = start + 1
    return "".join(out), frozenset(used)


def _with_inputs(prompt: str, blocks: Mapping[str, str], used: frozenset[str]) -> str:
    """Each input block the template did not place itself, appended: a step always sees its
    inputs, and always as fenced data."""
    missing = [block for name, block in blocks.items() if name not in used]
    return "\n\n".join([prompt, *missing]) if missing else prompt


def run_chain(call: FlowCall, dispatch: Dispatch) -> FlowOutcome:
    """Steps strictly in order; step N+1 gets step N's output as fenced untrusted data
    (``{previous}``, appended when the step's task does not place it). The first failed step
    stops the chain: the rest are reported ``skipped``, never spawned."""
    assert call.task is not None
    results: list[RunResult] = []
    previous: RunResult | None = None
    for index, step in enumerate(call.chain):
        key = f"step-{index + 1}"
        if previous is not None and not previous.ok:
            results.append(_skip(key, step, f"chain stopped at {previous.key} ({previous.agent})"))
            continue
        blocks: dict[str, str] = {}
        if previous is not None:
            label = f"output of {previous.key} ({previous.agent})"
            blocks["previous"] = untrusted_block(label, previous.output or "")
        prompt, used = render(step.task, {"task": call.task, **blocks})
        job = ChildJob(
            key,
            step,
            _with_inputs(prompt, blocks, used),
            stage=key,
            depends_on=(previous.key,) if previous is not None else (),
        )
        (previous,) = dispatch([job])
        results.append(previous)
    final = tuple(results)
    failed = next((r for r in final if r.status is RunStatus.FAILED), None)
    summary = (
        f"Flow chain: {len(final)} steps completed."
        if failed is None
        else f"Flow chain: stopped at {failed.key} ({failed.agent}): {failed.error_code}."
    )
    status = FlowStatus.COMPLETED if failed is None else FlowStatus.FAILED
    return FlowOutcome(Mode.CHAIN, status, final, summary)


def _skip(key: str, role: FlowTask, reason: str) -> RunResult:
    return RunResult(key, role.agent, RunStatus.SKIPPED, error=reason)


def run_graph(call: FlowCall, dispatch: Dispatch) -> FlowOutcome:
    """Dependency waves (``domain.flows.graph.waves``), each wave's ready nodes dispatched
    together. A node gets ``{task}`` and each dependency's output as fenced data
    (``{node.<id>}``, appended when not placed). A node whose dependency did not complete is
    never spawned: it is ``skipped`` naming that dependency (pi-squad's rule: pi-flows does not
    define graph failure propagation)."""
    assert call.graph is not None
    assert call.task is not None
    nodes = {node.id: node for node in call.graph.nodes}
    done: dict[str, RunResult] = {}
    for number, wave in enumerate(waves(call.graph), start=1):
        jobs: list[ChildJob] = []
        for node_id in wave:
            node = nodes[node_id]
            blocked = [d for d in node.depends_on if not done[d].ok]
            if blocked:
                done[node_id] = _skip(
                    f"node-{node_id}", node.as_task(), f"dependency '{blocked[0]}' did not complete"
                )
                continue
            blocks = {
                f"node.{d}": untrusted_block(f"output of node '{d}'", done[d].output or "")
                for d in node.depends_on
            }
            prompt, used = render(node.task, {"task": call.task, **blocks})
            jobs.append(
                ChildJob(
                    f"node-{node_id}",
                    node.as_task(),
                    _with_inputs(prompt, blocks, used),
                    stage=f"wave-{number}",
                    depends_on=tuple(f"node-{d}" for d in node.depends_on),
                )
            )
        if jobs:
            for job, result in zip(jobs, dispatch(jobs), strict=True):
                done[job.key.removeprefix("node-")] = result
    results = tuple(done[node.id] for node in call.graph.nodes)
    succeeded = sum(result.ok for result in results)
    return FlowOutcome(
        Mode.GRAPH,
        _status(results),
        results,
        f"Flow graph: {succeeded}/{len(results)} nodes completed.",
    )


STRATEGIES: Mapping[Mode, Callable[[FlowCall, Dispatch], FlowOutcome]] = {
    Mode.SINGLE: run_single,
    Mode.PARALLEL: run_parallel,
    Mode.CHAIN: run_chain,
    Mode.GRAPH: run_graph,
}

"""The fan-out and dependency modes (single, parallel, chain, graph) as strategies over one
dispatch seam (``domain.flows.runs.Dispatch``); the judging modes are in
``domain.flows.judging``, the table of both in ``domain.flows.strategies``.

A strategy decides what runs, in which order, and what each child is told; it never spawns,
waits or measures: the dispatch it is given does (``application.flows.dispatch``), under the
call's bounds.
"""

from __future__ import annotations

from domain.flows.call import FlowCall, Mode
from domain.flows.call_roles import FlowTask
from domain.flows.graph import waves
from domain.flows.handoff import HandoffGuard, PreparedHandoff
from domain.flows.handoff_record import HandoffRecord, summary
from domain.flows.mode_parts import (
    FlowOutcome,
    FlowStatus,
    refused_recipient,
    render,
    role_job,
    skip,
    with_inputs,
)
from domain.flows.panel import DEBRIEF_KEY, synthesis
from domain.flows.runs import ChildJob, Dispatch, RunResult, RunStatus


def task_key(index: int) -> str:
    return f"task-{index}"


def step_key(index: int) -> str:
    return f"step-{index + 1}"


def node_key(node_id: str) -> str:
    return f"node-{node_id}"


SINGLE_KEY = "single"


def planned_runs(call: FlowCall) -> tuple[tuple[str, FlowTask], ...]:
    """Every run the call may spawn, by the key its result carries, in result order: what an
    attested flow publishes one task record for before the first child starts."""
    if call.mode is Mode.SINGLE:
        ((_path, role),) = call.roles()
        return ((SINGLE_KEY, role),)
    if call.mode is Mode.PARALLEL:
        return tuple((task_key(i), task) for i, task in enumerate(call.tasks))
    if call.mode is Mode.CHAIN:
        return tuple((step_key(i), step) for i, step in enumerate(call.chain))
    if call.mode is Mode.GRAPH:
        assert call.graph is not None
        nodes = [(node_key(node.id), node.as_task()) for node in call.graph.nodes]
        debrief = call.graph.debrief
        synthesised = [] if debrief is None else [(DEBRIEF_KEY, debrief.as_task(call.task or ""))]
        return (*nodes, *synthesised)
    return ()


def _status(results: tuple[RunResult, ...]) -> FlowStatus:
    succeeded = sum(result.ok for result in results)
    if succeeded == len(results):
        return FlowStatus.COMPLETED
    return FlowStatus.PARTIAL if succeeded else FlowStatus.FAILED


def run_single(call: FlowCall, dispatch: Dispatch, _guard: HandoffGuard) -> FlowOutcome:
    (_path, role), *_ = call.roles()
    results = dispatch([role_job(call, SINGLE_KEY, role, role.task, stage="single")])
    result = results[0]
    state = "completed" if result.ok else f"failed ({result.error_code})"
    return FlowOutcome(Mode.SINGLE, _status(results), results, f"Flow single: {state}.")


def run_parallel(call: FlowCall, dispatch: Dispatch, _guard: HandoffGuard) -> FlowOutcome:
    """Every task at once, fan-out bounded by the dispatcher; a failed task cancels no
    sibling. No data passes between tasks."""
    jobs = [
        role_job(call, task_key(i), task, task.task, stage="fan-out")
        for i, task in enumerate(call.tasks)
    ]
    results = dispatch(jobs)
    succeeded = sum(result.ok for result in results)
    return FlowOutcome(
        Mode.PARALLEL,
        _status(results),
        results,
        f"Flow parallel: {succeeded}/{len(results)} succeeded.",
    )


def run_chain(call: FlowCall, dispatch: Dispatch, guard: HandoffGuard) -> FlowOutcome:
    """Steps strictly in order; step N+1 gets step N's handoff envelope (JSON: typed, or
    ``legacy-prose`` for a prose answer) as fenced untrusted data (``{previous}``, appended
    when the step's task does not place it), through the handoff guard. The first failed step
    stops the chain: the rest are reported ``skipped``, never spawned; a step the guard refuses
    is that failed step, never spawned."""
    assert call.task is not None
    results: list[RunResult] = []
    records: list[HandoffRecord] = []
    previous: RunResult | None = None
    for index, step in enumerate(call.chain):
        key = step_key(index)
        if previous is not None and not previous.ok:
            results.append(skip(key, step, f"chain stopped at {previous.key} ({previous.agent})"))
            continue
        blocks: dict[str, str] = {}
        carried: tuple[HandoffRecord, ...] = ()
        if previous is not None:
            label = f"output of {previous.key} ({previous.agent})"
            guard, prepared = guard.prepare_result(previous, label)
            delivery = guard.deliver(prepared, key)
            records.append(delivery.record)
            if delivery.block is None:
                previous = refused_recipient(key, step, delivery)
                results.append(previous)
                continue
            blocks["previous"] = delivery.block
            carried = (delivery.record,)
        prompt, used = render(step.task, {"task": call.task, **blocks})
        job = role_job(
            call,
            key,
            step,
            with_inputs(prompt, blocks, used),
            stage=key,
            depends_on=(previous.key,) if previous is not None else (),
            handoffs=carried,
            consumed=index < len(call.chain) - 1,
        )
        (previous,) = dispatch([job])
        results.append(previous)
    final = tuple(results)
    failed = next((r for r in final if r.status is RunStatus.FAILED), None)
    text = (
        f"Flow chain: {len(final)} steps completed."
        if failed is None
        else f"Flow chain: stopped at {failed.key} ({failed.agent}): {failed.error_code}."
    )
    status = FlowStatus.COMPLETED if failed is None else FlowStatus.FAILED
    handoffs = tuple(records)
    return FlowOutcome(Mode.CHAIN, status, final, text + summary(handoffs), handoffs)


def run_graph(call: FlowCall, dispatch: Dispatch, guard: HandoffGuard) -> FlowOutcome:
    """Dependency waves (``domain.flows.graph.waves``), each wave's ready nodes dispatched
    together. A node gets ``{task}`` and each dependency's handoff envelope (JSON) as fenced
    data (``{node.<id>}``, appended when not placed), through the handoff guard: each output is
    prepared once, when its first dependent is, in call order. A node whose dependency did not
    complete is never spawned: it is ``skipped`` naming that dependency (pi-squad's rule:
    pi-flows does not define graph failure propagation). A node the guard refuses stops the
    flow: it fails unspawned and every node not yet spawned is ``skipped``."""
    assert call.graph is not None
    assert call.task is not None
    nodes = {node.id: node for node in call.graph.nodes}
    consumed = {d for node in call.graph.nodes for d in node.depends_on}
    done: dict[str, RunResult] = {}
    prepared: dict[str, PreparedHandoff] = {}
    records: list[HandoffRecord] = []
    stopped: RunResult | None = None
    for number, wave in enumerate(waves(call.graph), start=1):
        jobs: list[ChildJob] = []
        for node_id in wave:
            node = nodes[node_id]
            key = node_key(node_id)
            blocked = [d for d in node.depends_on if not done[d].ok]
            if stopped is not None:
                done[node_id] = skip(key, node.as_task(), _stopped_by(stopped))
                continue
            if blocked:
                done[node_id] = skip(
                    key, node.as_task(), f"dependency '{blocked[0]}' did not complete"
                )
                continue
            blocks: dict[str, str] = {}
            carried: list[HandoffRecord] = []
            for d in node.depends_on:
                if d not in prepared:
                    label = f"output of node '{d}'"
                    guard, prepared[d] = guard.prepare_result(done[d], label)
                delivery = guard.deliver(prepared[d], key)
                records.append(delivery.record)
                if delivery.block is None:
                    stopped = done[node_id] = refused_recipient(key, node.as_task(), delivery)
                    break
                blocks[f"node.{d}"] = delivery.block
                carried.append(delivery.record)
            if stopped is not None:
                continue
            prompt, used = render(node.task, {"task": call.task, **blocks})
            jobs.append(
                role_job(
                    call,
                    key,
                    node.as_task(),
                    with_inputs(prompt, blocks, used),
                    stage=f"wave-{number}",
                    depends_on=tuple(node_key(d) for d in node.depends_on),
                    # pi-flows: a graph node sets its own contract; it has no fallback.
                    fallback=False,
                    handoffs=tuple(carried),
                    # The debrief reads every terminal node.
                    consumed=node_id in consumed or call.graph.debrief is not None,
                )
            )
        if stopped is not None:
            # Refused before this wave spawned: none of it does.
            for job in jobs:
                done[job.key.removeprefix(node_key(""))] = skip(
                    job.key, job.role, _stopped_by(stopped)
                )
        elif jobs:
            for job, result in zip(jobs, dispatch(jobs), strict=True):
                done[job.key.removeprefix(node_key(""))] = result
    results = tuple(done[node.id] for node in call.graph.nodes)
    succeeded = sum(result.ok for result in results)
    text = (
        f"Flow graph: {succeeded}/{len(results)} nodes completed."
        if stopped is None
        else f"Flow graph: stopped at {stopped.key} ({stopped.agent}): {stopped.error_code}."
    )
    status = FlowStatus.FAILED if stopped is not None else _status(results)
    if call.graph.debrief is not None:
        terminal = [done[node.id] for node in call.graph.nodes if node.id not in consumed]
        return _debriefed(
            call,
            dispatch,
            guard,
            FlowOutcome(Mode.GRAPH, status, results, text, tuple(records)),
            terminal=terminal,
            stopped=stopped,
        )
    handoffs = tuple(records)
    return FlowOutcome(Mode.GRAPH, status, results, text + summary(handoffs), handoffs)


SYNTHESISE_NODES = (
    "## Your part: the debrief\n"
    "The outputs above, given as data, are the graph's terminal nodes (those no other node "
    "depends on). Synthesise them into one answer to the task."
)


def _debriefed(
    call: FlowCall,
    dispatch: Dispatch,
    guard: HandoffGuard,
    graph: FlowOutcome,
    *,
    terminal: list[RunResult],
    stopped: RunResult | None,
) -> FlowOutcome:
    """The graph's outcome with ``graph.debrief`` run over the terminal nodes that completed
    (told which did not); skipped, naming what it waited for, when the flow stopped or no
    terminal node completed. A debrief that does not complete fails the flow."""
    assert call.graph is not None
    assert call.graph.debrief is not None
    role = call.graph.debrief.as_task(call.task or "")
    sources = [result for result in terminal if result.ok]
    crossed: tuple[HandoffRecord, ...] = ()
    text = graph.summary
    if stopped is not None:
        debriefed = skip(DEBRIEF_KEY, role, _stopped_by(stopped))
    elif not sources:
        waited = ", ".join(result.key for result in terminal)
        debriefed = skip(DEBRIEF_KEY, role, f"no terminal node completed ({waited})")
    else:
        missing = [f"{result.key} ({result.status})" for result in terminal if not result.ok]
        note = [f"Terminal nodes that did not complete: {', '.join(missing)}."] if missing else []
        debriefed, crossed = synthesis(
            call,
            dispatch,
            guard,
            key=DEBRIEF_KEY,
            role=role,
            sources=sources,
            instruction="\n".join([SYNTHESISE_NODES, *note]),
        )
    if stopped is None:
        how = "completed" if debriefed.ok else f"{debriefed.status} ({debriefed.error_code})"
        text = text.removesuffix(".") + f"; the debrief ({debriefed.agent}) {how}."
    handoffs = graph.handoffs + crossed
    return FlowOutcome(
        Mode.GRAPH,
        graph.status if debriefed.ok else FlowStatus.FAILED,
        (*graph.results, debriefed),
        text + summary(handoffs),
        handoffs,
    )


def _stopped_by(refused: RunResult) -> str:
    return f"flow stopped at {refused.key} by the handoff policy"

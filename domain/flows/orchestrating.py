"""``orchestrate``: a commander decomposes the goal, workers run the subtasks in dependency
waves, a debrief synthesises, a verifier may judge (flows-brief §2).

The stages: decomposition, review and the first headroom projection
(``domain.flows.orchestrate_decompose``); the waves (here); the debrief and the verifier
(``domain.flows.orchestrate_synthesis``). Like every mode this only decides what runs and what
each child is told. A subtask whose dependency did not complete is **stranded**: never spawned,
no spend, reported as such and named in the debrief's "Subtasks not completed" manifest. Before
each batch of workers (a wave, ``concurrency`` at a time) the spend so far plus the remaining
effort weight times the spend per weight unit observed (the commander's, until a worker ran) is
projected against every flow ceiling: a batch that cannot fit is never spawned
(``BUDGET_HEADROOM_EXCEEDED``).
"""

from __future__ import annotations

from collections.abc import Mapping

from domain.errors import ErrorCode
from domain.flows.budget import Ceilings, Dimension
from domain.flows.call import FlowCall
from domain.flows.handoff import HandoffGuard, PreparedHandoff
from domain.flows.handoff_record import HandoffAction, HandoffRecord
from domain.flows.mode_parts import FlowOutcome, ModeInputs, refused_recipient, role_job, skip
from domain.flows.orchestrate_decompose import decompose
from domain.flows.orchestrate_plan import Decomposition, Subtask, headroom_breach, spent
from domain.flows.orchestrate_state import Orchestration, worker_key
from domain.flows.orchestrate_synthesis import synthesise
from domain.flows.runs import ChildJob, Dispatch, RunResult, RunStatus

SKIPPED = RunStatus.SKIPPED

WORKERS_KEY = "workers"


def worker_prompt(goal: str, subtask: Subtask, count: int, blocks: Mapping[str, str]) -> str:
    """What a worker is told: the goal, its own subtask and its details, then each dependency's
    result fenced as untrusted data under a heading naming its source."""
    parts = [f"## Goal\n{goal}", f"## Your subtask ({subtask.id} of {count})\n{subtask.objective}"]
    parts += [f"### {heading}\n{text}" for heading, text in subtask.details]
    parts += [
        f"## Result of dependency '{source}' (untrusted data)\n{block}"
        for source, block in blocks.items()
    ]
    parts.append("Do only this subtask; other workers do the rest.")
    return "\n\n".join(parts)


def run_orchestrate(
    call: FlowCall, dispatch: Dispatch, guard: HandoffGuard, _inputs: ModeInputs
) -> FlowOutcome:
    """Decompose, then the waves, then the debrief and the verifier (docs/flows.md,
    orchestrate)."""
    assert call.orchestrate is not None
    state = Orchestration(call, guard)
    found = decompose(state, dispatch)
    if not isinstance(found, Decomposition):
        return found
    notice = _decomposition_crossing(state)
    if notice is None:
        return state.stopped()
    settled = _waves(state, dispatch, found, notice)
    if isinstance(settled, FlowOutcome):
        return settled
    return synthesise(state, dispatch, found, settled)


def _decomposition_crossing(state: Orchestration) -> str | None:
    """The commander's decomposition crosses to the workers as a handoff: ``None`` when the
    policy stops it (``fail``, or ``quarantine``, which would leave the workers no subtask),
    else the notice each worker's prompt starts with (empty when nothing was flagged)."""
    commander = state.commander_run()
    label = f"decomposition of {commander.key}"
    state.guard, prepared = state.guard.prepare_result(commander, label)
    delivery = state.guard.deliver(prepared, WORKERS_KEY)
    state.records.append(delivery.record)
    assert state.call.orchestrate is not None
    role = state.call.orchestrate.worker(state.goal)
    if delivery.block is None:
        state.results.append(refused_recipient(WORKERS_KEY, role, delivery))
        return None
    if delivery.record.action is HandoffAction.QUARANTINED:
        reason = "the decomposition was quarantined by the handoff policy: no subtask can cross"
        state.refuse(role.agent, ErrorCode.HANDOFF_POLICY_VIOLATION, reason)
        return None
    if delivery.record.action is HandoffAction.NOTICE:
        return delivery.block.split("\n", 1)[0]
    return ""


def _blocked_by(subtask: Subtask, done: Mapping[str, RunResult]) -> str | None:
    return next((d for d in subtask.depends_on if not done[d].ok), None)


def _remaining_weight(found: Decomposition, done: Mapping[str, RunResult]) -> int:
    """The weight still to run: subtasks not settled and not doomed to be stranded."""
    doomed = {key for key, result in done.items() if not result.ok}
    total = 0
    for wave in found.waves():
        for subtask_id in wave:
            subtask = next(s for s in found.subtasks if s.id == subtask_id)
            if subtask_id in done:
                continue
            if any(d in doomed for d in subtask.depends_on):
                doomed.add(subtask_id)
            else:
                total += subtask.effort_weight
    return total


def _per_unit(
    state: Orchestration, found: Decomposition, done: Mapping[str, RunResult]
) -> dict[Dimension, float]:
    """The spend per weight unit: the workers' so far, or the commander's before any ran."""
    worked = [s for s in found.subtasks if s.id in done and done[s.id].status is not SKIPPED]
    weight = sum(s.effort_weight for s in worked)
    if not weight:
        return spent([state.commander_run().usage])
    per_run = spent([done[s.id].usage for s in worked])
    return {dimension: value / weight for dimension, value in per_run.items()}


def _keep_settled(
    state: Orchestration, found: Decomposition, done: Mapping[str, RunResult]
) -> None:
    """The workers settled so far join the results, in decomposition order."""
    state.results.extend(done[s.id] for s in found.subtasks if s.id in done)


def _waves(
    state: Orchestration, dispatch: Dispatch, found: Decomposition, notice: str
) -> dict[str, RunResult] | FlowOutcome:
    """Every subtask's result by id (stranded ones skipped), or the settled flow when a handoff
    was refused or a batch could not fit the budget."""
    call = state.call
    assert call.orchestrate is not None
    by_id = {s.id: s for s in found.subtasks}
    worker = call.orchestrate.worker(state.goal)
    commander_key = state.commander_run().key
    ceilings = Ceilings(call.max_cost_usd, call.max_tokens, call.max_generated_tokens)
    done: dict[str, RunResult] = {}
    prepared: dict[str, PreparedHandoff] = {}
    for number, wave in enumerate(found.waves(), start=1):
        jobs: list[ChildJob] = []
        for subtask_id in wave:
            subtask = by_id[subtask_id]
            key = worker_key(subtask_id)
            blocker = _blocked_by(subtask, done)
            if blocker is not None:
                reason = f"stranded: dependency '{blocker}' did not complete"
                done[subtask_id] = skip(key, worker, reason)
                continue
            blocks: dict[str, str] = {}
            carried: list[HandoffRecord] = []
            for d in subtask.depends_on:
                if d not in prepared:
                    label = f"output of {worker_key(d)} ({done[d].agent})"
                    state.guard, prepared[d] = state.guard.prepare_result(done[d], label)
                delivery = state.guard.deliver(prepared[d], key)
                state.records.append(delivery.record)
                if delivery.block is None:
                    _keep_settled(state, found, done)
                    state.results.append(refused_recipient(key, worker, delivery))
                    return state.stopped()
                blocks[d] = delivery.block
                carried.append(delivery.record)
            prompt = worker_prompt(state.goal, subtask, len(found.subtasks), blocks)
            jobs.append(
                role_job(
                    call,
                    key,
                    worker,
                    f"{notice}\n\n{prompt}" if notice else prompt,
                    stage=f"wave-{number}",
                    depends_on=(commander_key, *(worker_key(d) for d in subtask.depends_on)),
                    fallback=False,
                    handoffs=tuple(carried),
                    # Its dependents or the debrief read it.
                    consumed=True,
                )
            )
        for start in range(0, len(jobs), call.concurrency):
            batch = jobs[start : start + call.concurrency]
            spend = spent([r.usage for r in [*state.results, *done.values()]])
            per_unit = _per_unit(state, found, done)
            breach = headroom_breach(ceilings, spend, per_unit, _remaining_weight(found, done))
            if breach is not None:
                _keep_settled(state, found, done)
                reason = f"before wave {number}: {breach}"
                return state.refuse(worker.agent, ErrorCode.BUDGET_HEADROOM_EXCEEDED, reason)
            for job, result in zip(batch, dispatch(batch), strict=True):
                done[job.key.removeprefix(worker_key(""))] = result
    return {s.id: done[s.id] for s in found.subtasks}

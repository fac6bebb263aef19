"""The modes steered by a control token (``domain.flows.control``): ``route`` and ``loop``.

Like every mode they only decide what runs and what each child is told; the dispatch they are
given spawns and bounds the children, so contracts, budgets, traces and write isolation apply
as to any other run. A child's output that steers the flow is read by the control-token rules
only (its first line, its exact JSON, or a contracted role's ``data.*``); an output handed to
another child crosses the handoff guard like a chain step's.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.call_roles import FlowTask
from domain.flows.control import (
    LoopState,
    Marker,
    Reading,
    Verdict,
    loop_of,
    read_contract,
    read_token,
    route_of,
    verdict_of,
)
from domain.flows.handoff import Delivery, HandoffGuard, PreparedHandoff
from domain.flows.handoff_record import HandoffAction, HandoffRecord, summary
from domain.flows.mode_fields import Route
from domain.flows.mode_parts import (
    Decision,
    FlowOutcome,
    FlowStatus,
    ModeInputs,
    refused_recipient,
    render,
    role_job,
    with_inputs,
)
from domain.flows.runs import Dispatch, RunResult, RunStatus

CONTROLLER_KEY = "controller"
ROUTED_KEY = "routed"
LOOP_KEY = "loop"


def body_key(iteration: int) -> str:
    return f"body-{iteration}"


def judge_key(iteration: int) -> str:
    return f"judge-{iteration}"


def reading_of(result: RunResult, marker: Marker) -> Reading:
    """The token ``marker`` in a run's answer: a contracted run's validated ``data`` only,
    else its text (docs/flows.md, "Control tokens")."""
    if result.contract_id is not None:
        data = (result.envelope or {}).get("data")
        return read_contract(data if isinstance(data, dict) else {}, marker)
    return read_token(result.output or "", marker)


def _unspawned(key: str, agent: str, code: ErrorCode, reason: str) -> RunResult:
    return RunResult(key, agent, RunStatus.FAILED, error_code=code, error=reason)


def _stopped(
    mode: Mode,
    results: list[RunResult],
    records: list[HandoffRecord],
    decisions: list[Decision] | None = None,
) -> FlowOutcome:
    failed = results[-1]
    text = f"Flow {mode}: stopped at {failed.key} ({failed.agent}): {failed.error_code}."
    handoffs = tuple(records)
    return FlowOutcome(
        mode,
        FlowStatus.FAILED,
        tuple(results),
        text + summary(handoffs),
        handoffs,
        tuple(decisions or ()),
    )


# -- route --------------------------------------------------------------------------------------


def controller_prompt(task: str, route: Route, briefs: Mapping[str, str]) -> str:
    """What the controller is told: the task, each candidate with its description, and the one
    line its answer must start with."""
    lines = [f"- {name}: {briefs.get(name, '(no description)')}" for name in route.candidates]
    return (
        f"{task}\n\nChoose the one agent best suited to this task, or none.\n"
        "Candidates:\n" + "\n".join(lines) + "\n\n"
        "The first line of your answer must be exactly `ROUTE: <candidate>` (a name above) or "
        "`ROUTE: none`, with nothing else on that line."
    )


def run_route(
    call: FlowCall, dispatch: Dispatch, guard: HandoffGuard, inputs: ModeInputs
) -> FlowOutcome:
    """The controller picks a candidate; that one agent runs the task (or the fallback when the
    controller picked none, answered unreadably or its answer was quarantined). Nothing picked
    and no fallback: ``ROUTE_UNRESOLVED``, no second child."""
    assert call.route is not None
    assert call.task is not None
    route = call.route
    controller = route.controller.as_task(call.task)
    told = render(controller.task, {"task": call.task})[0]
    prompt = controller_prompt(told, route, inputs.briefs)
    (decision,) = dispatch(
        [role_job(call, CONTROLLER_KEY, controller, prompt, stage="route", consumed=True)]
    )
    results = [decision]
    if not decision.ok:
        return _stopped(Mode.ROUTE, results, [])
    # The controller's answer steers the flow: it crosses the guard as any handoff does, and a
    # withheld one is read as no choice.
    guard, prepared = guard.prepare_result(decision, f"output of {CONTROLLER_KEY}")
    delivery = guard.deliver(prepared, ROUTED_KEY)
    records = [delivery.record]
    if delivery.block is None:
        results.append(refused_recipient(ROUTED_KEY, controller, delivery))
        return _stopped(Mode.ROUTE, results, records)
    withheld = delivery.record.action is HandoffAction.QUARANTINED
    choice = route_of(reading_of(decision, Marker.ROUTE), route.candidates)
    said = "quarantined" if withheld else choice.route or ("none" if choice.declined else "?")
    decisions = [Decision("route.decision", CONTROLLER_KEY, said, str(choice.source))]
    target = (None if withheld else choice.route) or route.fallback
    if target is None:
        reason = (
            "the controller's answer was quarantined"
            if withheld
            else "the controller chose none"
            if choice.declined
            else "the controller's answer named no candidate"
        )
        results.append(
            _unspawned(
                ROUTED_KEY,
                decision.agent,
                ErrorCode.ROUTE_UNRESOLVED,
                f"{reason}, and the call sets no route.fallback",
            )
        )
        return _stopped(Mode.ROUTE, results, records, decisions)
    (answer,) = dispatch(
        [role_job(call, ROUTED_KEY, FlowTask(target, call.task), call.task, stage="routed")]
    )
    results.append(answer)
    if not answer.ok:
        return _stopped(Mode.ROUTE, results, records, decisions)
    how = "fallback" if target != choice.route else "chosen by the controller"
    handoffs = tuple(records)
    return FlowOutcome(
        Mode.ROUTE,
        FlowStatus.COMPLETED,
        tuple(results),
        f"Flow route: {target} ({how}) completed." + summary(handoffs),
        handoffs,
        tuple(decisions),
    )


# -- loop ---------------------------------------------------------------------------------------


@attrs.frozen
class _Carried:
    """What the next iteration's body is given: the fenced blocks and their records."""

    blocks: dict[str, str] = attrs.field(factory=dict)
    records: tuple[HandoffRecord, ...] = ()


@attrs.frozen
class _Iteration:
    """One iteration's place in the loop: its number and whether it is the last allowed."""

    number: int
    last: bool


def _decision(body: RunResult, judged: RunResult | None) -> Decision:
    """What ended or continued this iteration: the judge's verdict, else the body's loop state."""
    if judged is not None:
        verdict = verdict_of(reading_of(judged, Marker.VERDICT))
        return Decision("loop.judge_verdict", judged.key, verdict.verdict.upper(), verdict.source)
    state = loop_of(reading_of(body, Marker.LOOP))
    return Decision("loop.body_state", body.key, state.state.upper(), state.source)


CONVERGED = frozenset({Verdict.PASS.upper(), LoopState.DONE.upper()})


def _judge(
    call: FlowCall,
    dispatch: Dispatch,
    judge_role: FlowTask,
    *,
    body: RunResult,
    delivery: Delivery,
    at: _Iteration,
) -> RunResult:
    """The judge's run over the body's output, fenced (``{output}``, appended when unplaced)."""
    blocks = {"output": delivery.block or ""}
    told, used = render(judge_role.task, {"task": call.task or "", **blocks})
    (judged,) = dispatch(
        [
            role_job(
                call,
                judge_key(at.number),
                judge_role,
                with_inputs(told, blocks, used),
                stage=f"iteration-{at.number}",
                depends_on=(body.key,),
                handoffs=(delivery.record,),
                consumed=not at.last,
            )
        ]
    )
    return judged


def _carry(
    guard: HandoffGuard,
    prepared: PreparedHandoff,
    judged: RunResult | None,
    following: str,
) -> tuple[HandoffGuard, tuple[HandoffRecord, ...], _Carried | Delivery]:
    """The body's output (``{previous}``) and the judge's critique (``{critique}``) handed to the
    next body; the refusing delivery instead when the policy lets one not cross."""
    deliveries = [("previous", guard.deliver(prepared, following))]
    if judged is not None:
        guard, critique = guard.prepare_result(judged, f"critique of {judged.key}")
        deliveries.append(("critique", guard.deliver(critique, following)))
    records = tuple(delivery.record for _name, delivery in deliveries)
    for _name, delivery in deliveries:
        if delivery.block is None:
            return guard, records, delivery
    blocks = {name: delivery.block or "" for name, delivery in deliveries}
    return guard, records, _Carried(blocks, records)


def run_loop(
    call: FlowCall, dispatch: Dispatch, guard: HandoffGuard, _inputs: ModeInputs
) -> FlowOutcome:
    """Body, then judge (if any), until the body says ``LOOP: DONE`` (no judge) or the judge
    ``VERDICT: PASS``, at most ``maxIterations`` times. The judge reads the body's output as
    fenced data; each later body is given its previous output and the judge's critique (pi-flows
    leaves that open; docs/flows.md says so). A failed run stops the loop; no convergence is
    ``LOOP_DID_NOT_CONVERGE``, with every iteration's output kept in the results."""
    assert call.loop is not None
    assert call.task is not None
    loop = call.loop
    body_role = loop.body.as_task(call.task)
    judge_role = loop.judge.as_task(call.task) if loop.judge is not None else None
    results: list[RunResult] = []
    records: list[HandoffRecord] = []
    carried = _Carried()
    decisions: list[Decision] = []
    for number in range(1, loop.max_iterations + 1):
        at = _Iteration(number, number == loop.max_iterations)
        prompt, used = render(body_role.task, {"task": call.task, **carried.blocks})
        body_job = role_job(
            call,
            body_key(number),
            body_role,
            with_inputs(prompt, carried.blocks, used),
            stage=f"iteration-{number}",
            handoffs=carried.records,
            consumed=judge_role is not None or not at.last,
        )
        (body,) = dispatch([body_job])
        results.append(body)
        if not body.ok:
            return _stopped(Mode.LOOP, results, records, decisions)
        guard, prepared = guard.prepare_result(body, f"output of {body.key} ({body.agent})")
        judged: RunResult | None = None
        if judge_role is not None:
            delivery = guard.deliver(prepared, judge_key(number))
            records.append(delivery.record)
            if delivery.block is None:
                results.append(refused_recipient(judge_key(number), judge_role, delivery))
                return _stopped(Mode.LOOP, results, records, decisions)
            judged = _judge(call, dispatch, judge_role, body=body, delivery=delivery, at=at)
            results.append(judged)
            if not judged.ok:
                return _stopped(Mode.LOOP, results, records, decisions)
        decisions.append(_decision(body, judged))
        if decisions[-1].value in CONVERGED:
            handoffs = tuple(records)
            who = "the judge's PASS" if judged is not None else "the body's DONE"
            text = f"Flow loop: converged in {number} iteration(s) on {who}."
            return FlowOutcome(
                Mode.LOOP,
                FlowStatus.COMPLETED,
                tuple(results),
                text + summary(handoffs),
                handoffs,
                tuple(decisions),
            )
        if at.last:
            break
        guard, crossed, carried_or_refusal = _carry(guard, prepared, judged, body_key(number + 1))
        records.extend(crossed)
        if isinstance(carried_or_refusal, Delivery):
            results.append(refused_recipient(body_key(number + 1), body_role, carried_or_refusal))
            return _stopped(Mode.LOOP, results, records, decisions)
        carried = carried_or_refusal
    token = "VERDICT: PASS" if judge_role is not None else "LOOP: DONE"
    results.append(
        _unspawned(
            LOOP_KEY,
            body_role.agent,
            ErrorCode.LOOP_DID_NOT_CONVERGE,
            f"no {token} in {loop.max_iterations} iteration(s); the last output is "
            f"{body_key(loop.max_iterations)}'s",
        )
    )
    return _stopped(Mode.LOOP, results, records, decisions)

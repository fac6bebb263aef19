"""``evaluate``: a draft revised until its check passes and every critic says ``VERDICT: PASS``;
and the parts ``search`` (``domain.flows.searching``) shares with it.

As every mode they only decide what runs and what each child is told; a critic's or a scorer's
answer is read by the control-token rules only (``domain.flows.control``), and every output one
child is shown of another crosses the handoff guard. A check command's output is no agent's: it
is fenced as untrusted data and never steers the flow but by its exit status.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

import attrs

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.control import Marker, Verdict, verdict_of
from domain.flows.handoff import Delivery, HandoffGuard, PreparedHandoff
from domain.flows.handoff_record import HandoffRecord
from domain.flows.judging import _stopped, _unspawned, reading_of
from domain.flows.mode_fields import CHECK_TIMEOUT_MS
from domain.flows.mode_parts import (
    CheckOutcome,
    Decision,
    FlowOutcome,
    FlowStatus,
    ModeInputs,
    refused_recipient,
    render,
    role_job,
    settled,
    with_inputs,
)
from domain.flows.runs import ChildJob, Dispatch, RunResult, untrusted_block

VERDICT_LINE = (
    "The first line of your answer must be exactly `VERDICT: PASS` or `VERDICT: REVISE`, with "
    "nothing else on that line; then, for REVISE, what must change."
)


@attrs.frozen
class Crossing:
    """Blocks handed to one recipient, and the records of their crossing; ``refused`` is the
    delivery the policy stopped (the recipient must not spawn)."""

    blocks: dict[str, str] = attrs.field(factory=dict)
    records: tuple[HandoffRecord, ...] = ()
    refused: Delivery | None = None


def cross(
    guard: HandoffGuard, handed: Sequence[tuple[str, PreparedHandoff]], recipient: str
) -> Crossing:
    deliveries = [(name, guard.deliver(prepared, recipient)) for name, prepared in handed]
    records = tuple(delivery.record for _name, delivery in deliveries)
    refused = next((d for _name, d in deliveries if d.block is None), None)
    blocks = {name: delivery.block or "" for name, delivery in deliveries}
    return Crossing(blocks, records, refused)


def told(template: str, goal: str, blocks: dict[str, str], ask: str) -> str:
    """A role's template over ``{task}`` and its input blocks (appended when unplaced), then
    what this run is asked."""
    prompt, used = render(template, {"task": goal, **blocks})
    return with_inputs(f"{prompt}\n\n{ask}" if ask else prompt, blocks, used)


# -- evaluate -----------------------------------------------------------------------------------


def operator_key(iteration: int) -> str:
    return f"operator-{iteration}"


def check_key(iteration: int) -> str:
    return f"check-{iteration}"


def critic_key(iteration: int, index: int) -> str:
    return f"critic-{iteration}-{index}"


REVISE_ASK = (
    "Your previous artifact and the critique of it are below. Revise the artifact in place to "
    "answer every point of the critique, and return the complete revised artifact."
)


def critic_prompt(goal: str, block: str, pass_contract: str | None) -> str:
    """What a critic is told: the task, its rubric (the call's ``passContract`` appended), the
    operator's artifact as fenced data, and the one line its answer must start with."""
    rubric = "Judge whether the artifact below fully and correctly does this task."
    if pass_contract:
        rubric += f" It passes only if it also meets this pass contract: {pass_contract}"
    return f"{goal}\n\n{rubric}\n{VERDICT_LINE}\n\n{block}"


def _check_critique(command: str, ran: CheckOutcome, key: str) -> str:
    """A failed check's output as the critique the operator is shown (fenced: it is data)."""
    said = "was stopped at its bound" if ran.timed_out else f"exited {ran.exit_code}"
    cut = " (cut at 16 KiB)" if ran.cut else ""
    fenced = untrusted_block(f"output of {key}{cut}", ran.output)
    return f"The check command `{command}` {said}; its output:\n{fenced}"


@attrs.frozen
class _Judged:
    """One round's judging: what ran and was recorded, and its verdict (``passed``, and the
    critique the next draft answers: the REVISE critics' answers, or the failed check's
    output); ``stopped`` when a run failed or a handoff was refused, which ends the flow."""

    guard: HandoffGuard
    results: list[RunResult] = attrs.field(factory=list)
    records: list[HandoffRecord] = attrs.field(factory=list)
    decisions: list[Decision] = attrs.field(factory=list)
    stopped: bool = False
    passed: bool = False
    critique: list[tuple[str, PreparedHandoff]] = attrs.field(factory=list)
    check_text: str = ""


def run_evaluate(
    call: FlowCall, dispatch: Dispatch, guard: HandoffGuard, inputs: ModeInputs
) -> FlowOutcome:
    """Operator, then the check command (if any) in the operator's directory, then the critics
    together, at most ``maxIterations`` rounds. A check exiting non-zero sends the draft back
    with its output as the critique (the critics are skipped that round); the draft passes when
    the check exits 0 and every critic says PASS. Out of rounds, the last draft is returned as a
    ``partial`` flow (docs/flows.md, evaluate)."""
    assert call.evaluate is not None
    assert call.task is not None
    evaluate = call.evaluate
    operator = evaluate.operator.as_task(call.task)
    results: list[RunResult] = []
    records: list[HandoffRecord] = []
    decisions: list[Decision] = []
    carried = Crossing()
    if evaluate.check_command is not None and inputs.check is None:
        # Refused before any spawn: a draft no check could ever pass is not worth its cost.
        reason = "this host gives the flow no check-command runner"
        results.append(_unspawned(check_key(1), "check", ErrorCode.CHECK_COMMAND_FAILED, reason))
        return _stopped(Mode.EVALUATE, results, records, decisions)
    for number in range(1, evaluate.max_iterations + 1):
        ask = REVISE_ASK if carried.blocks else ""
        (draft,) = dispatch(
            [
                role_job(
                    call,
                    operator_key(number),
                    operator,
                    told(operator.task, call.task, carried.blocks, ask),
                    stage=f"round-{number}",
                    handoffs=carried.records,
                    consumed=True,
                )
            ]
        )
        results.append(draft)
        if not draft.ok:
            return _stopped(Mode.EVALUATE, results, records, decisions)
        guard, prepared = guard.prepare_result(draft, f"output of {draft.key} ({draft.agent})")
        judged = _judge_round(call, dispatch, guard, inputs, prepared=prepared, number=number)
        guard = judged.guard
        results.extend(judged.results)
        records.extend(judged.records)
        decisions.extend(judged.decisions)
        if judged.stopped:
            return _stopped(Mode.EVALUATE, results, records, decisions)
        if judged.passed:
            text = f"Flow evaluate: passed in {number} round(s); the artifact is {draft.key}'s."
            return settled(
                Mode.EVALUATE,
                FlowStatus.COMPLETED,
                text,
                results=results,
                records=records,
                decisions=decisions,
            )
        if number == evaluate.max_iterations:
            break
        handed = [("previous", prepared), *judged.critique]
        carried = cross(guard, handed, operator_key(number + 1))
        records.extend(carried.records)
        if carried.refused is not None:
            results.append(refused_recipient(operator_key(number + 1), operator, carried.refused))
            return _stopped(Mode.EVALUATE, results, records, decisions)
        if judged.check_text:
            carried = attrs.evolve(carried, blocks={**carried.blocks, "check": judged.check_text})
    text = (
        f"Flow evaluate: no pass in {evaluate.max_iterations} round(s); the last attempt "
        f"({operator_key(evaluate.max_iterations)}) is returned unaccepted."
    )
    return settled(
        Mode.EVALUATE,
        FlowStatus.PARTIAL,
        text,
        results=results,
        records=records,
        decisions=decisions,
    )


def _check(call: FlowCall, inputs: ModeInputs, number: int, judged: _Judged) -> _Judged | None:
    """The round's check command in the operator's directory: ``None`` when it exited 0, else
    the round it settles (stopped when it could not start; REVISE with its output when it
    exited non-zero or was stopped at its bound)."""
    assert call.evaluate is not None
    command = call.evaluate.check_command
    if command is None:
        return None
    assert inputs.check is not None
    cwd = posixpath.normpath(posixpath.join(inputs.cwd, call.evaluate.operator.cwd or ""))
    ran = inputs.check(command, cwd, CHECK_TIMEOUT_MS)
    key = check_key(number)
    if ran.start_error is not None:
        reason = f"`{command}` could not start in {cwd}: {ran.start_error}"
        judged.results.append(_unspawned(key, "check", ErrorCode.CHECK_COMMAND_FAILED, reason))
        return attrs.evolve(judged, stopped=True)
    if ran.passed:
        return None
    judged.decisions.append(Decision("evaluate.panel_verdict", key, "REVISE", "check"))
    return attrs.evolve(judged, check_text=_check_critique(command, ran, key))


def _judge_round(
    call: FlowCall,
    dispatch: Dispatch,
    guard: HandoffGuard,
    inputs: ModeInputs,
    *,
    prepared: PreparedHandoff,
    number: int,
) -> _Judged:
    """The round's check, then (when it passed or there is none) its critics' verdicts."""
    assert call.evaluate is not None
    assert call.task is not None
    evaluate = call.evaluate
    judged = _Judged(guard)
    checked = _check(call, inputs, number, judged)
    if checked is not None:
        return checked
    jobs: list[ChildJob] = []
    for index, ref in enumerate(evaluate.critics, start=1):
        critic = ref.as_task(call.task)
        key = critic_key(number, index)
        delivery = guard.deliver(prepared, key)
        judged.records.append(delivery.record)
        if delivery.block is None:
            judged.results.append(refused_recipient(key, critic, delivery))
            return attrs.evolve(judged, stopped=True)
        jobs.append(
            role_job(
                call,
                key,
                critic,
                critic_prompt(call.task, delivery.block, evaluate.pass_contract),
                stage=f"round-{number}",
                depends_on=(operator_key(number),),
                fallback=False,
                handoffs=(delivery.record,),
                consumed=number < evaluate.max_iterations,
            )
        )
    verdicts = dispatch(jobs)
    judged.results.extend(verdicts)
    if not all(verdict.ok for verdict in verdicts):
        return attrs.evolve(judged, stopped=True)
    critique: list[tuple[str, PreparedHandoff]] = []
    for verdict in verdicts:
        read = verdict_of(reading_of(verdict, Marker.VERDICT))
        judged.decisions.append(
            Decision("evaluate.panel_verdict", verdict.key, read.verdict.upper(), read.source)
        )
        if read.verdict is Verdict.REVISE:
            guard, said = guard.prepare_result(verdict, f"critique of {verdict.key}")
            critique.append((f"critique-{len(critique) + 1}", said))
    return attrs.evolve(judged, guard=guard, passed=not critique, critique=critique)

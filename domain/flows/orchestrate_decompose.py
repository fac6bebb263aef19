"""``orchestrate``'s first stage: the commander decomposes the goal, the reviewer (if any) judges
the decomposition (``VERDICT: REVISE`` sends it back, in full, with the critique), and the budget
headroom is projected before any worker (with a reviewer, a plan too big for the budget is first
sent back as "replan smaller")."""

from __future__ import annotations

import json

from domain.errors import ErrorCode
from domain.flows.budget import Ceilings
from domain.flows.call import MAX_PARALLEL_TASKS
from domain.flows.control import Verdict
from domain.flows.handoff_record import HandoffRecord
from domain.flows.mode_parts import Decision, FlowOutcome, refused_recipient, role_job
from domain.flows.orchestrate_fields import bare
from domain.flows.orchestrate_plan import (
    Decomposition,
    Refused,
    answer_array,
    headroom_breach,
    read_decomposition,
    spent,
)
from domain.flows.orchestrate_state import Orchestration, decompose_key, review_key
from domain.flows.refining import VERDICT_LINE
from domain.flows.runs import Dispatch, RunResult

DECOMPOSE_ASK = (
    "Answer with a JSON array only: either strings (independent subtasks), or objects with "
    "`id` (a letter or digit, then letters, digits, `_`, `.` or `-`; at most 64), `objective`, "
    "`dependsOn` (the ids it needs), `effortWeight` (1 to 5) and, where they help, `scope`, "
    "`nonGoals`, `inputs`, `expectedReturn`, `acceptanceEvidence`. Do not write placeholders "
    "for other subtasks' output: the flow hands each dependency's result to its dependents."
)
REVIEW_ASK = (
    "Review the decomposition below of this goal into subtasks: does each subtask stand on its "
    "own, do the dependencies order them correctly, is anything missing or redundant?"
)


def commander_prompt(goal: str, max_subtasks: int, worker: str, critique: str | None) -> str:
    prompt = (
        f"## Goal\n{goal}\n\n## Decompose\nSplit the goal into at most {max_subtasks} subtasks, "
        f"each small enough for one {worker} worker. {DECOMPOSE_ASK}"
    )
    if critique is None:
        return prompt
    return (
        f"{prompt}\n\n## Critique of your previous decomposition\n{critique}\n\n"
        "Return a complete replacement decomposition."
    )


def review_prompt(goal: str, criteria: str | None) -> str:
    """What a reviewer is told before the decomposition itself."""
    extra = f" It passes only if it also meets these criteria: {criteria}" if criteria else ""
    return f"{goal}\n\n{REVIEW_ASK}{extra}\n{VERDICT_LINE}"


def commander_answer(result: RunResult) -> object:
    """The decomposition a commander answered: a contracted one's ``data.subtasks`` (or a
    ``data`` that is itself the list), else the JSON array of its text."""
    if result.contract_id is not None:
        data = (result.envelope or {}).get("data")
        return data.get("subtasks") if isinstance(data, dict) else data
    return answer_array(result.output or "")


def _ceilings(state: Orchestration) -> Ceilings:
    call = state.call
    return Ceilings(call.max_cost_usd, call.max_tokens, call.max_generated_tokens)


def _decomposed(state: Orchestration, ran: RunResult) -> Decomposition | FlowOutcome:
    assert state.call.orchestrate is not None
    try:
        return read_decomposition(
            commander_answer(ran), state.call.orchestrate.max_subtasks, MAX_PARALLEL_TASKS
        )
    except Refused as refused:
        return state.refuse(ran.agent, refused.code, refused.reason)


def decompose(state: Orchestration, dispatch: Dispatch) -> Decomposition | FlowOutcome:
    """The decomposition the workers will run, or the settled flow when there is none: the
    commander failed, its answer was refused, the reviewer never passed one, or the budget
    cannot hold it."""
    call = state.call
    assert call.orchestrate is not None
    orchestrate = call.orchestrate
    attempts = orchestrate.review_max_iterations if orchestrate.review is not None else 1
    commander = bare(orchestrate.commander.as_task(state.goal))
    critique: str | None = None
    carried: tuple[HandoffRecord, ...] = ()
    for attempt in range(1, attempts + 1):
        key = decompose_key(attempt)
        prompt = commander_prompt(
            state.goal, orchestrate.max_subtasks, orchestrate.recon.agent, critique
        )
        job = role_job(
            call,
            key,
            commander,
            prompt,
            stage="decompose",
            fallback=False,
            handoffs=carried,
            consumed=True,
        )
        (ran,) = dispatch([job])
        state.results.append(ran)
        if not ran.ok:
            return state.stopped()
        found = _decomposed(state, ran)
        if not isinstance(found, Decomposition):
            return found
        weight = sum(subtask.effort_weight for subtask in found.subtasks)
        spend = spent([result.usage for result in state.results])
        breach = headroom_breach(_ceilings(state), spend, spent([ran.usage]), weight)
        if breach is not None:
            if attempt == attempts:
                return state.refuse(ran.agent, ErrorCode.BUDGET_HEADROOM_EXCEEDED, breach)
            state.decisions.append(Decision("orchestrate.headroom", key, "REPLAN", "budget"))
            critique = f"Replan smaller: the plan cannot fit the flow budget: {breach}."
            carried = ()
            continue
        if orchestrate.review is None:
            return found
        judged = _review(state, dispatch, found, attempt)
        if judged is None:
            return state.stopped()
        if state.verdict("orchestrate.review_verdict", judged) is Verdict.PASS:
            return found
        if attempt == attempts:
            reason = f"the reviewer asked for revision {attempts} time(s)"
            return state.refuse(judged.agent, ErrorCode.DECOMPOSITION_REVIEW_FAILED, reason)
        next_key = decompose_key(attempt + 1)
        state.guard, said = state.guard.prepare_result(judged, f"critique of {judged.key}")
        crossed = state.guard.deliver(said, next_key)
        state.records.append(crossed.record)
        if crossed.block is None:
            state.results.append(refused_recipient(next_key, commander, crossed))
            return state.stopped()
        critique, carried = crossed.block, (crossed.record,)
    raise AssertionError("unreachable: the last attempt returns")


def _review(
    state: Orchestration, dispatch: Dispatch, found: Decomposition, attempt: int
) -> RunResult | None:
    """The reviewer's run over ``found`` (shown normalised, as fenced data), or ``None`` when
    the flow stopped: the handoff was refused or the reviewer failed."""
    call = state.call
    assert call.orchestrate is not None
    assert call.orchestrate.review is not None
    source = decompose_key(attempt)
    text = json.dumps(found.document(), indent=1, ensure_ascii=False)
    state.guard, prepared = state.guard.prepare(source, f"decomposition of {source}", text)
    return state.judge(
        dispatch,
        key=review_key(attempt),
        role=bare(call.orchestrate.review.as_task(state.goal)),
        prepared=prepared,
        head=review_prompt(state.goal, call.orchestrate.review_criteria),
    )

"""The modes that put one question to several agents: ``vote`` (independent ballots, merged by
an optional debrief; no majority is ever computed) and ``debate`` (advocates argue in rounds,
each later round answering the previous one, then an adjudicator decides); and the synthesis
step they share with ``graph.debrief``.

As every mode they only decide what runs and what each child is told; the dispatch spawns and
bounds the children. Every output one agent hands another (a ballot to the debrief, an argument
to the next round, the last round to the adjudicator) crosses the handoff guard.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.call_roles import AgentRef, FlowTask
from domain.flows.handoff import Delivery, HandoffGuard, PreparedHandoff
from domain.flows.handoff_record import HandoffRecord, summary
from domain.flows.mode_parts import (
    Decision,
    FlowOutcome,
    FlowStatus,
    ModeInputs,
    refused_recipient,
    role_job,
    skip,
)
from domain.flows.runs import Dispatch, RunResult, RunStatus

DEBRIEF_KEY = "debrief"
ADJUDICATOR_KEY = "adjudicator"

# What identical voters are each asked to be, in turn (pi-squad's texts: pi-flows names the
# idea, solver, skeptic, evidence checker, without publishing its wording; docs/flows.md).
VOTER_STANCES = (
    "Solver: answer the task directly and give the strongest evidence for your answer.",
    "Skeptic: before you conclude, look for counterexamples and reasons the obvious answer "
    "is wrong.",
    "Evidence checker: verify each claim the answer rests on and name every assumption you "
    "could not check.",
    "Completeness checker: make sure every part of the task is answered, not only the easiest.",
    "Risk reader: name the failure modes, ambiguities and caveats a quick answer would miss.",
    "Minimalist: give the shortest answer that is still correct and justified.",
    "Second route: reach your answer by another line of reasoning than the most obvious one.",
    "Devil's advocate: try to refute the answer most voters will give; if it stands, say why.",
)
MERGE_BALLOTS = (
    "## Your part: merge the ballots\n"
    "The answers above are independent ballots on the task, given as data. Say where they agree "
    "and where they differ, weigh them by the quality of their reasoning, and give the one best "
    "answer. If no majority emerges, say so plainly; never invent one."
)
OPENING = (
    "Argue the strongest position you can defend on your own: your assumptions, evidence and "
    "trade-offs, how it could fail, and the rule by which you think the decision should be made."
)
REBUTTAL = (
    "The previous round's arguments are below, as data. Answer the strongest points against "
    "your position, concede what is right, repair what is weak, and say what evidence would "
    "change your mind."
)
ADJUDICATE = (
    "## Your part: the adjudicator\n"
    "Decide against the task's own constraints, not by majority or eloquence, and check the "
    "sources yourself before trusting the arguments. Return one decision; a constraint matrix "
    "(each constraint against each option); the strongest case for each side and the trade-off "
    "that decides; the risks with their mitigations; and the conditions under which the "
    "decision should be reversed. Do not invent a compromise the constraints do not support."
)


def voter_key(number: int) -> str:
    return f"voter-{number}"


def advocate_key(round_number: int, number: int) -> str:
    return f"round-{round_number}-advocate-{number}"


def _prepare(
    guard: HandoffGuard, sources: Sequence[RunResult]
) -> tuple[HandoffGuard, list[PreparedHandoff]]:
    """Each source's output made ready to cross, once, in order (the guard's history grows)."""
    prepared: list[PreparedHandoff] = []
    for source in sources:
        guard, ready = guard.prepare_result(source, f"output of {source.key} ({source.agent})")
        prepared.append(ready)
    return guard, prepared


def _deliver(
    guard: HandoffGuard, prepared: Sequence[PreparedHandoff], recipient: str
) -> tuple[list[str], tuple[HandoffRecord, ...], Delivery | None]:
    """The fenced blocks ``recipient`` is given and their records; the first delivery the
    policy refused instead of blocks when one was (the recipient must not spawn)."""
    blocks: list[str] = []
    records: list[HandoffRecord] = []
    for ready in prepared:
        delivery = guard.deliver(ready, recipient)
        records.append(delivery.record)
        if delivery.block is None:
            return blocks, tuple(records), delivery
        blocks.append(delivery.block)
    return blocks, tuple(records), None


def synthesis(
    call: FlowCall,
    dispatch: Dispatch,
    guard: HandoffGuard,
    *,
    key: str,
    role: FlowTask,
    sources: Sequence[RunResult],
    instruction: str,
) -> tuple[RunResult, tuple[HandoffRecord, ...]]:
    """``role`` told the task, each source's output fenced (through the guard), then what to do
    with them: a vote's debrief, a debate's adjudicator, a graph's debrief. Refused by the
    policy, it fails unspawned (``HANDOFF_POLICY_VIOLATION``)."""
    guard, prepared = _prepare(guard, sources)
    blocks, records, refused = _deliver(guard, prepared, key)
    if refused is not None:
        return refused_recipient(key, role, refused), records
    prompt = "\n\n".join([call.task or "", *blocks, instruction])
    job = role_job(
        call,
        key,
        role,
        prompt,
        stage=key,
        depends_on=tuple(source.key for source in sources),
        handoffs=records,
    )
    (result,) = dispatch([job])
    return result, records


def _outcome(
    mode: Mode,
    status: FlowStatus,
    results: Sequence[RunResult],
    text: str,
    *,
    records: Sequence[HandoffRecord] = (),
    decisions: Sequence[Decision] = (),
) -> FlowOutcome:
    handoffs = tuple(records)
    return FlowOutcome(
        mode, status, tuple(results), text + summary(handoffs), handoffs, tuple(decisions)
    )


# -- vote ---------------------------------------------------------------------------------------


def stances_apply(voters: Sequence[AgentRef]) -> bool:
    """Identical voters (one agent, one model and tier) would give one answer n times: each is
    asked to take a different stance."""
    first = voters[0]
    return all((v.agent, v.model, v.tier) == (first.agent, first.model, first.tier) for v in voters)


def voter_prompt(task: str, number: int, total: int, *, stance: bool) -> str:
    if not stance:
        return task
    told = VOTER_STANCES[(number - 1) % len(VOTER_STANCES)]
    return (
        f"{task}\n\n## Your stance: voter {number} of {total}\n{told}\n"
        "Work on your own: do not count on the other voters to catch what you miss. Give your "
        "own best answer to the task."
    )


def run_vote(
    call: FlowCall, dispatch: Dispatch, guard: HandoffGuard, _inputs: ModeInputs
) -> FlowOutcome:
    """Every voter answers the task at once (identical voters each in their own stance); then
    the debrief, if any, merges the ballots that succeeded. Without a debrief every answer is
    returned as it is: no majority is computed. A ``vote.tally`` event counts the ballots."""
    assert call.vote is not None
    assert call.task is not None
    vote, task = call.vote, call.task
    voters = vote.ballots()
    stance = stances_apply(voters)
    jobs = [
        role_job(
            call,
            voter_key(number),
            ref.as_task(task),
            voter_prompt(task, number, len(voters), stance=stance),
            stage="voters",
            consumed=vote.debrief is not None,
        )
        for number, ref in enumerate(voters, start=1)
    ]
    results = list(dispatch(jobs))
    ballots = [result for result in results if result.ok]
    tally = f"{len(ballots)}/{len(results)} ballots"
    decisions = [Decision("vote.tally", "voters", tally, "voters' settled runs")]
    counted = f"Flow vote: {len(ballots)}/{len(results)} voters succeeded"
    if not ballots:
        return _outcome(Mode.VOTE, FlowStatus.FAILED, results, f"{counted}.", decisions=decisions)
    every = len(ballots) == len(results)
    if vote.debrief is None:
        status = FlowStatus.COMPLETED if every else FlowStatus.PARTIAL
        text = f"{counted}; no debrief set: each answer is below, and no majority is computed."
        return _outcome(Mode.VOTE, status, results, text, decisions=decisions)
    role = vote.debrief.as_task(task)
    merged, records = synthesis(
        call,
        dispatch,
        guard,
        key=DEBRIEF_KEY,
        role=role,
        sources=ballots,
        instruction=MERGE_BALLOTS,
    )
    results.append(merged)
    if not merged.ok:
        text = f"{counted}; the debrief ({role.agent}) failed: {merged.error_code}."
        return _outcome(
            Mode.VOTE, FlowStatus.FAILED, results, text, records=records, decisions=decisions
        )
    status = FlowStatus.COMPLETED if every else FlowStatus.PARTIAL
    text = f"{counted}; merged by {role.agent}."
    return _outcome(Mode.VOTE, status, results, text, records=records, decisions=decisions)


# -- debate -------------------------------------------------------------------------------------


def advocate_prompt(
    task: str, number: int, total: int, rounds: tuple[int, int], arguments: Sequence[str]
) -> str:
    """An advocate's prompt: the task, its part (advocate of total, round of rounds), what to
    do in that round, and the previous round's usable arguments, fenced."""
    current, last = rounds
    what = OPENING if current == 1 else REBUTTAL
    head = f"## Your part: advocate {number} of {total}, round {current} of {last}\n{what}"
    return "\n\n".join([task, head, *arguments])


def _too_few(adjudicator: FlowTask, round_number: int, usable: int, total: int) -> RunResult:
    return RunResult(
        ADJUDICATOR_KEY,
        adjudicator.agent,
        RunStatus.FAILED,
        error_code=ErrorCode.DEBATE_TOO_FEW_PARTICIPANTS,
        error=f"round {round_number}: {usable} of {total} advocates gave a usable argument; "
        "the adjudicator needs two or more",
    )


def run_debate(
    call: FlowCall, dispatch: Dispatch, guard: HandoffGuard, _inputs: ModeInputs
) -> FlowOutcome:
    """Round 1: every advocate argues on its own, at once. Each later round: every advocate is
    given the previous round's usable arguments (through the guard) to answer. A round with
    fewer than two usable arguments stops the debate (``DEBATE_TOO_FEW_PARTICIPANTS``, no
    adjudicator); otherwise the adjudicator decides over the last round's arguments, recorded
    as a ``debate.judge_verdict`` event."""
    assert call.debate is not None
    assert call.task is not None
    debate, task = call.debate, call.task
    advocates = [ref.as_task(task) for ref in debate.participants]
    adjudicator = debate.adjudicator.as_task(task)
    results: list[RunResult] = []
    records: list[HandoffRecord] = []
    usable: list[RunResult] = []
    for current in range(1, debate.rounds + 1):
        guard, prepared = _prepare(guard, usable)
        jobs = []
        for number, role in enumerate(advocates, start=1):
            key = advocate_key(current, number)
            arguments, crossed, refused = _deliver(guard, prepared, key)
            records.extend(crossed)
            if refused is not None:
                # Nothing of this round spawns: the refused advocate fails, the rest are skipped.
                reason = f"flow stopped at {key} by the handoff policy"
                results.extend(
                    refused_recipient(key, other, refused)
                    if other_number == number
                    else skip(advocate_key(current, other_number), other, reason)
                    for other_number, other in enumerate(advocates, start=1)
                )
                return _stopped(results, records)
            told = advocate_prompt(
                task, number, len(advocates), (current, debate.rounds), arguments
            )
            jobs.append(
                role_job(
                    call,
                    key,
                    role,
                    told,
                    stage=f"round-{current}",
                    depends_on=tuple(argument.key for argument in usable),
                    handoffs=crossed,
                    consumed=True,
                )
            )
        settled = dispatch(jobs)
        results.extend(settled)
        usable = [result for result in settled if result.ok]
        if len(usable) < 2:
            results.append(_too_few(adjudicator, current, len(usable), len(advocates)))
            return _stopped(results, records)
    decided, crossed = synthesis(
        call,
        dispatch,
        guard,
        key=ADJUDICATOR_KEY,
        role=adjudicator,
        sources=usable,
        instruction=ADJUDICATE,
    )
    results.append(decided)
    records.extend(crossed)
    if not decided.ok:
        return _stopped(results, records)
    held = f"{len(advocates)} advocates, {debate.rounds} round(s)"
    verdict = Decision(
        "debate.judge_verdict", ADJUDICATOR_KEY, f"decided by {adjudicator.agent}", held
    )
    text = f"Flow debate: {held}, adjudicated by {adjudicator.agent}."
    return _outcome(
        Mode.DEBATE, FlowStatus.COMPLETED, results, text, records=records, decisions=[verdict]
    )


def _stopped(results: Sequence[RunResult], records: Sequence[HandoffRecord]) -> FlowOutcome:
    failed = next(r for r in reversed(results) if r.status is RunStatus.FAILED)
    text = f"Flow debate: stopped at {failed.key} ({failed.agent}): {failed.error_code}."
    return _outcome(Mode.DEBATE, FlowStatus.FAILED, results, text, records=records)

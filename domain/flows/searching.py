"""``search``: candidates generated and scored (``SCORE: n``; unreadable is 0), the best
``beamWidth`` kept and refined for ``maxRounds`` rounds, the winner debriefed.

Each candidate crosses the handoff guard to its scorer, and a refinement is shown its parent
candidate and the scorer's reasons the same way; only the score line steers the search.
"""

from __future__ import annotations

import attrs

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.control import Marker, score_of
from domain.flows.handoff import HandoffGuard, PreparedHandoff
from domain.flows.handoff_record import HandoffRecord
from domain.flows.judging import _stopped, _unspawned, reading_of
from domain.flows.mode_parts import (
    Decision,
    FlowOutcome,
    FlowStatus,
    ModeInputs,
    refused_recipient,
    role_job,
    settled,
)
from domain.flows.refining import cross, told
from domain.flows.runs import ChildJob, Dispatch, RunResult

SCORE_LINE = (
    "The first line of your answer must be exactly `SCORE: <n>`, n a whole number from 0 "
    "(useless) to 100 (complete and correct), with nothing else on that line; then your reasons."
)
DEBRIEF_KEY = "debrief"
SEARCH_KEY = "search"


def candidate_key(round_number: int, index: int) -> str:
    return f"candidate-{round_number}-{index}"


def score_key(round_number: int, index: int) -> str:
    return f"score-{round_number}-{index}"


@attrs.frozen
class _Scored:
    """A candidate the scorer read: its run, its prepared output, its score and the scorer's
    prepared reasons (what a refinement of it is shown)."""

    candidate: RunResult
    prepared: PreparedHandoff
    score: int
    reasons: PreparedHandoff


def generate_ask(index: int, count: int) -> str:
    return (
        f"Propose candidate {index} of {count}: one complete answer to the task. The candidates "
        "are scored against each other, so take an approach of your own."
    )


def refine_ask(score: int) -> str:
    """The refinement prompt (pi-flows does not publish its own; docs/flows.md, search)."""
    return (
        f"The candidate below scored {score}/100; the scorer's reasons follow it. Refine it: "
        "keep what earned its score, fix every weakness the scorer named, and return one "
        "complete improved candidate."
    )


def scorer_prompt(goal: str, block: str) -> str:
    return (
        f"{goal}\n\nScore the candidate below as an answer to this task.\n{SCORE_LINE}\n\n{block}"
    )


@attrs.define
class _Search:
    """The search's running state: every run, handoff and score so far, and the guard."""

    guard: HandoffGuard
    results: list[RunResult] = attrs.field(factory=list)
    records: list[HandoffRecord] = attrs.field(factory=list)
    decisions: list[Decision] = attrs.field(factory=list)

    def stopped(self) -> FlowOutcome:
        return _stopped(Mode.SEARCH, self.results, self.records, self.decisions)


def _generate(
    call: FlowCall, dispatch: Dispatch, state: _Search, round_number: int, beam: list[_Scored]
) -> list[tuple[int, RunResult]] | None:
    """The round's candidates: fresh ones in round 1, else each a refinement of a beam member
    in turn (its output and the scorer's reasons handed over); ``None`` when a handoff was
    refused."""
    assert call.search is not None
    assert call.task is not None
    search = call.search
    generator = search.generator.as_task(call.task)
    jobs: list[ChildJob] = []
    for index in range(1, search.candidates + 1):
        key = candidate_key(round_number, index)
        if not beam:
            prompt = told(generator.task, call.task, {}, generate_ask(index, search.candidates))
            jobs.append(role_job(call, key, generator, prompt, stage="round-1", consumed=True))
            continue
        parent = beam[(index - 1) % len(beam)]
        handed = [("candidate", parent.prepared), ("reasons", parent.reasons)]
        crossing = cross(state.guard, handed, key)
        state.records.extend(crossing.records)
        if crossing.refused is not None:
            state.results.append(refused_recipient(key, generator, crossing.refused))
            return None
        prompt = told(generator.task, call.task, crossing.blocks, refine_ask(parent.score))
        jobs.append(
            role_job(
                call,
                key,
                generator,
                prompt,
                stage=f"round-{round_number}",
                depends_on=(parent.candidate.key,),
                handoffs=crossing.records,
                consumed=True,
            )
        )
    made = dispatch(jobs)
    state.results.extend(made)
    return [(index, run) for index, run in enumerate(made, start=1) if run.ok]


def _score(
    call: FlowCall,
    dispatch: Dispatch,
    state: _Search,
    round_number: int,
    candidates: list[tuple[int, RunResult]],
) -> list[_Scored] | None:
    """Each candidate's score, its scorers run together; ``None`` when a scorer failed or a
    candidate could not cross to its scorer."""
    assert call.search is not None
    assert call.task is not None
    scorer = call.search.scorer.as_task(call.task)
    jobs: list[ChildJob] = []
    prepared: list[PreparedHandoff] = []
    for index, candidate in candidates:
        state.guard, handed = state.guard.prepare_result(
            candidate, f"output of {candidate.key} ({candidate.agent})"
        )
        key = score_key(round_number, index)
        delivery = state.guard.deliver(handed, key)
        state.records.append(delivery.record)
        if delivery.block is None:
            state.results.append(refused_recipient(key, scorer, delivery))
            return None
        prepared.append(handed)
        jobs.append(
            role_job(
                call,
                key,
                scorer,
                scorer_prompt(call.task, delivery.block),
                stage=f"round-{round_number}",
                depends_on=(candidate.key,),
                fallback=False,
                handoffs=(delivery.record,),
                consumed=True,
            )
        )
    scores = dispatch(jobs)
    state.results.extend(scores)
    if not all(score.ok for score in scores):
        return None
    scored: list[_Scored] = []
    for (_index, candidate), handed, run in zip(candidates, prepared, scores, strict=True):
        read = score_of(reading_of(run, Marker.SCORE))
        state.decisions.append(Decision("search.scores", run.key, str(read.score), read.source))
        state.guard, reasons = state.guard.prepare_result(run, f"reasons of {run.key}")
        scored.append(_Scored(candidate, handed, read.score, reasons))
    return scored


def run_search(
    call: FlowCall, dispatch: Dispatch, guard: HandoffGuard, _inputs: ModeInputs
) -> FlowOutcome:
    """Generate ``candidates``, score each (``SCORE: n``; unreadable is 0), keep the best
    ``beamWidth`` (ties: the earlier candidate), refine the beam in each later round (the beam
    is re-chosen from the kept and the new candidates, so a worse refinement never replaces a
    better candidate), then debrief the winner. No candidate in round 1:
    ``SEARCH_NO_CANDIDATES``."""
    assert call.search is not None
    assert call.task is not None
    search = call.search
    state = _Search(guard)
    beam: list[_Scored] = []
    for round_number in range(1, search.max_rounds + 1):
        made = _generate(call, dispatch, state, round_number, beam)
        if made is None:
            return state.stopped()
        if not made and not beam:
            reason = f"none of the {search.candidates} generator run(s) of round 1 succeeded"
            state.results.append(
                _unspawned(
                    SEARCH_KEY, search.generator.agent, ErrorCode.SEARCH_NO_CANDIDATES, reason
                )
            )
            return state.stopped()
        scored = _score(call, dispatch, state, round_number, made)
        if scored is None:
            return state.stopped()
        ranked = sorted([*beam, *scored], key=lambda entry: -entry.score)
        beam = ranked[: search.beam_width]
    winner = beam[0]
    debrief = search.debrief.as_task(call.task)
    crossing = cross(state.guard, [("winner", winner.prepared)], DEBRIEF_KEY)
    state.records.extend(crossing.records)
    if crossing.refused is not None:
        state.results.append(refused_recipient(DEBRIEF_KEY, debrief, crossing.refused))
        return state.stopped()
    ask = (
        f"A search over candidate answers kept the one below as the best (it scored "
        f"{winner.score}/100). Write the final answer to the task from it."
    )
    (final,) = dispatch(
        [
            role_job(
                call,
                DEBRIEF_KEY,
                debrief,
                told(debrief.task, call.task, crossing.blocks, ask),
                stage="debrief",
                depends_on=(winner.candidate.key,),
                handoffs=crossing.records,
            )
        ]
    )
    state.results.append(final)
    if not final.ok:
        return state.stopped()
    text = (
        f"Flow search: {search.max_rounds} round(s); {winner.candidate.key} won with "
        f"{winner.score}/100, debriefed."
    )
    return settled(
        Mode.SEARCH,
        FlowStatus.COMPLETED,
        text,
        results=state.results,
        records=state.records,
        decisions=state.decisions,
    )

"""``orchestrate`` over a scripted dispatch: the commander's decomposition, the workers in
dependency waves, stranded dependents, the budget headroom and the debrief's manifest of what
did not complete."""

from __future__ import annotations

import pytest

from domain.errors import ErrorCode
from domain.flows.call import Mode
from domain.flows.mode_parts import Decision, FlowStatus
from domain.flows.runs import ChildJob, RunResult, RunStatus
from tests.unit.domain.flows.orchestrate_support import (
    GOAL,
    PLAN,
    orchestrate,
    plan,
    refusal,
    spending,
)
from tests.unit.domain.flows.test_judging import (
    BatchedDispatch,
    ScriptedDispatch,
    failed,
    run,
)

# -- decomposition and waves ----------------------------------------------------------------------


def test_the_workers_run_in_dependency_waves_then_the_debrief_synthesises() -> None:
    dispatch = BatchedDispatch({"decompose": plan()})
    outcome = run(orchestrate(), dispatch)
    assert dispatch.batches == [
        ["decompose"],
        ["worker-schema", "worker-api"],
        ["worker-flows"],
        ["synthesis-1"],
    ]
    assert [job.role.agent for job in dispatch.jobs] == [
        "commander",
        "recon",
        "recon",
        "recon",
        "debrief",
    ]
    assert outcome.mode is Mode.ORCHESTRATE
    assert outcome.status is FlowStatus.COMPLETED
    assert outcome.summary.startswith(
        "Flow orchestrate: 3 subtasks, 3 succeeded, 0 failed, 0 stranded, synthesized by debrief."
    )
    # Results in the mode's order: commander, workers in decomposition order, debrief.
    assert [r.key for r in outcome.results] == [
        "decompose",
        "worker-schema",
        "worker-api",
        "worker-flows",
        "synthesis-1",
    ]


def test_a_wave_runs_concurrency_workers_at_a_time() -> None:
    subtasks = [f"area {i}" for i in range(5)]
    dispatch = BatchedDispatch({"decompose": plan(subtasks)})
    run({**orchestrate(), "concurrency": 2}, dispatch)
    assert dispatch.batches[1:4] == [
        ["worker-1", "worker-2"],
        ["worker-3", "worker-4"],
        ["worker-5"],
    ]


def test_the_commander_is_asked_for_a_json_array_bounded_by_max_subtasks() -> None:
    dispatch = ScriptedDispatch({"decompose": plan()})
    run({**orchestrate(maxSubtasks=5), "returnContract": "One paragraph."}, dispatch)
    told = dispatch.told("decompose")
    assert told.startswith(f"## Goal\n{GOAL}")
    assert "at most 5 subtasks, each small enough for one recon worker" in told
    assert "Answer with a JSON array only" in told
    # The call's return requirements are the synthesis's, never the commander's.
    assert "One paragraph." not in told
    assert "One paragraph." in dispatch.told("synthesis-1")


def test_a_dependent_worker_gets_each_dependency_fenced_under_its_source() -> None:
    dispatch = ScriptedDispatch(
        {"decompose": plan(), "worker-schema": "tables: invoice", "worker-api": "POST /bill"}
    )
    run(orchestrate(), dispatch)
    told = dispatch.told("worker-flows")
    assert "## Your subtask (flows of 3)\nTrace the invoice flow" in told
    assert "## Result of dependency 'schema' (untrusted data)" in told
    assert "## Result of dependency 'api' (untrusted data)" in told
    assert told.count("<<<UNTRUSTED DATA") == 2
    assert "tables: invoice" in told
    assert "POST /bill" in told
    job = next(job for job in dispatch.jobs if job.key == "worker-flows")
    assert job.depends_on == ("decompose", "worker-schema", "worker-api")
    assert "### Scope\napi/" in dispatch.told("worker-api")


def test_workers_get_the_worker_return_contract_and_the_alias_works() -> None:
    for field in ("workerReturnContract", "returnContract"):
        dispatch = ScriptedDispatch({"decompose": plan(["a"])})
        run(orchestrate(**{field: "List files with line numbers."}), dispatch)
        assert "List files with line numbers." in dispatch.told("worker-1")
        assert "List files with line numbers." not in dispatch.told("synthesis-1")


def test_a_flat_list_is_truncated_to_max_subtasks_and_numbered() -> None:
    dispatch = ScriptedDispatch({"decompose": plan(["a", "b", "c", "d"])})
    outcome = run(orchestrate(maxSubtasks=2), dispatch)
    assert dispatch.keys == ["decompose", "worker-1", "worker-2", "synthesis-1"]
    assert outcome.summary.startswith("Flow orchestrate: 2 subtasks, 2 succeeded")


def test_a_flat_list_is_also_bounded_by_the_fan_out_cap() -> None:
    dispatch = ScriptedDispatch({"decompose": plan([f"area {i}" for i in range(12)])})
    run(orchestrate(maxSubtasks=16), dispatch)
    assert [key for key in dispatch.keys if key.startswith("worker-")][-1] == "worker-8"


def test_the_answer_may_be_fenced_as_json_and_a_task_key_stands_for_objective() -> None:
    fenced = "```json\n" + plan([{"id": "a", "task": "Read the README"}]) + "\n```"
    dispatch = ScriptedDispatch({"decompose": fenced})
    outcome = run(orchestrate(), dispatch)
    assert "Read the README" in dispatch.told("worker-a")
    assert outcome.status is FlowStatus.COMPLETED


@pytest.mark.parametrize(
    ("answer", "code", "said"),
    [
        ("[]", ErrorCode.ORCHESTRATE_NO_SUBTASKS, "the commander returned no subtask"),
        ('["  "]', ErrorCode.ORCHESTRATE_NO_SUBTASKS, "every subtask was blank"),
        ("I would split it in two.", ErrorCode.DECOMPOSITION_INVALID, "no JSON array"),
        ('["a", {"id": "b", "objective": "x"}]', ErrorCode.DECOMPOSITION_INVALID, "mix shapes"),
        ('[{"id": "-a", "objective": "x"}]', ErrorCode.DECOMPOSITION_INVALID, "needs an id"),
        ('[{"id": "a"}]', ErrorCode.DECOMPOSITION_INVALID, "has no objective"),
        (
            '[{"id": "a", "objective": "x", "agent": "operator"}]',
            ErrorCode.DECOMPOSITION_INVALID,
            "unknown keys ['agent']",
        ),
        (
            '[{"id": "a", "objective": "x", "effortWeight": 6}]',
            ErrorCode.DECOMPOSITION_INVALID,
            "effortWeight must be an integer 1..5",
        ),
        (
            '[{"id": "a", "objective": "x"}, {"id": "a", "objective": "y"}]',
            ErrorCode.DECOMPOSITION_INVALID,
            "duplicate subtask id 'a'",
        ),
        (
            '[{"id": "a", "objective": "x", "dependsOn": ["z"]}]',
            ErrorCode.DECOMPOSITION_INVALID,
            "depends on 'z', which is no subtask's id",
        ),
        (
            '[{"id": "a", "objective": "x", "dependsOn": ["b"]},'
            ' {"id": "b", "objective": "y", "dependsOn": ["a"]}]',
            ErrorCode.DECOMPOSITION_CYCLE,
            "a cycle: a -> b -> a",
        ),
    ],
)
def test_a_decomposition_the_flow_cannot_run_is_refused_before_any_worker(
    answer: str, code: ErrorCode, said: str
) -> None:
    dispatch = ScriptedDispatch({"decompose": answer})
    outcome = run(orchestrate(), dispatch)
    assert dispatch.keys == ["decompose"]
    assert outcome.status is FlowStatus.FAILED
    assert refusal(outcome) == ("orchestrate", code)
    assert said in (outcome.results[-1].error or "")
    assert outcome.summary.startswith("Flow orchestrate: ")
    assert outcome.summary.rstrip().endswith(f"({code}).")


def test_structured_subtasks_above_max_subtasks_are_refused_not_truncated() -> None:
    subtasks = [{"id": f"s{i}", "objective": "x"} for i in range(3)]
    dispatch = ScriptedDispatch({"decompose": plan(subtasks)})
    outcome = run(orchestrate(maxSubtasks=2), dispatch)
    assert refusal(outcome) == ("orchestrate", ErrorCode.DECOMPOSITION_INVALID)
    assert outcome.results[-1].error == "3 structured subtasks exceed maxSubtasks 2"


def test_a_contracted_commanders_validated_data_is_read_never_its_prose() -> None:
    def contracted(job: ChildJob) -> RunResult:
        envelope = {"status": "completed", "data": {"subtasks": ["read the README"]}}
        return RunResult(
            job.key,
            job.role.agent,
            RunStatus.COMPLETED,
            plan(["from the prose"]),
            contract_id="sha256:" + "0" * 64,
            envelope=envelope,
        )

    dispatch = ScriptedDispatch({"decompose": contracted})
    run(orchestrate(), dispatch)
    assert "read the README" in dispatch.told("worker-1")
    assert "from the prose" not in dispatch.told("worker-1")


def test_a_failed_commander_stops_the_flow() -> None:
    dispatch = ScriptedDispatch({"decompose": failed})
    outcome = run(orchestrate(), dispatch)
    assert dispatch.keys == ["decompose"]
    assert refusal(outcome) == ("decompose", ErrorCode.CHILD_EXIT_NONZERO)


# -- stranded dependents --------------------------------------------------------------------------


def test_a_failed_subtask_strands_its_dependents_and_the_debrief_gets_the_manifest() -> None:
    subtasks = [
        *PLAN,
        {"id": "report", "objective": "Summarise the invoice flow", "dependsOn": ["flows"]},
        {"id": "terms", "objective": "List the domain terms"},
    ]
    dispatch = ScriptedDispatch({"decompose": plan(subtasks), "worker-api": failed})
    outcome = run(orchestrate(), dispatch)
    # Neither stranded subtask spawned.
    assert dispatch.keys == [
        "decompose",
        "worker-schema",
        "worker-api",
        "worker-terms",
        "synthesis-1",
    ]
    statuses = {r.key: (r.status, r.error) for r in outcome.results}
    assert statuses["worker-flows"] == (
        RunStatus.SKIPPED,
        "stranded: dependency 'api' did not complete",
    )
    assert statuses["worker-report"] == (
        RunStatus.SKIPPED,
        "stranded: dependency 'flows' did not complete",
    )
    assert outcome.status is FlowStatus.PARTIAL
    assert outcome.summary.startswith(
        "Flow orchestrate: 5 subtasks, 2 succeeded, 1 failed, 2 stranded, synthesized by debrief."
    )
    told = dispatch.told("synthesis-1")
    assert "## Subtasks not completed" in told
    assert "- api (failed: CHILD_EXIT_NONZERO): Map the HTTP API" in told
    assert "- flows (stranded: dependency 'api' did not complete): Trace the invoice flow" in told
    # The debrief reads the terminal subtasks (those nothing depends on) that succeeded.
    assert "### Subtask terms: List the domain terms" in told
    assert "### Subtask schema" not in told


def test_no_terminal_subtask_succeeded_means_no_debrief() -> None:
    dispatch = ScriptedDispatch({"decompose": plan(), "worker-schema": failed})
    outcome = run(orchestrate(), dispatch)
    assert "synthesis-1" not in dispatch.keys
    assert outcome.status is FlowStatus.FAILED
    assert outcome.summary.startswith(
        "Flow orchestrate: 3 subtasks, 1 succeeded, 1 failed, 1 stranded; "
        "no terminal subtask succeeded."
    )


# -- budget headroom ------------------------------------------------------------------------------


def test_a_plan_that_cannot_fit_the_budget_is_refused_before_any_worker() -> None:
    # The commander generated 100 tokens: 4 units of weight project 100 + 4 x 100 = 500 > 450.
    dispatch = ScriptedDispatch({"decompose": spending(plan(), 100)})
    outcome = run({**orchestrate(), "maxGeneratedTokens": 450}, dispatch)
    assert dispatch.keys == ["decompose"]
    assert refusal(outcome) == ("orchestrate", ErrorCode.BUDGET_HEADROOM_EXCEEDED)
    assert outcome.results[-1].error == (
        "projected maxGeneratedTokens 500 (spent 100 + remaining weight 4 x 100 per unit) "
        "exceeds the ceiling 450"
    )


def test_a_later_wave_that_cannot_fit_is_refused_before_it_spawns() -> None:
    # Fits before the workers (10 + 4 x 10 = 50 <= 120); the first wave's workers spend 90 on 3
    # units, so the last wave projects 10 + 90 + 1 x 30 = 130 > 120.
    dispatch = ScriptedDispatch(
        {
            "decompose": spending(plan(), 10),
            "worker-schema": spending("tables", 60),
            "worker-api": spending("routes", 30),
        }
    )
    outcome = run({**orchestrate(), "maxGeneratedTokens": 120}, dispatch)
    assert dispatch.keys == ["decompose", "worker-schema", "worker-api"]
    assert refusal(outcome) == ("orchestrate", ErrorCode.BUDGET_HEADROOM_EXCEEDED)
    assert (outcome.results[-1].error or "").startswith(
        "before wave 2: projected maxGeneratedTokens 130"
    )
    assert [r.key for r in outcome.results] == [
        "decompose",
        "worker-schema",
        "worker-api",
        "orchestrate",
    ]


def test_with_a_reviewer_a_plan_too_big_is_first_sent_back_to_replan_smaller() -> None:
    dispatch = ScriptedDispatch(
        {
            "decompose": spending(plan(), 100),
            "decompose-2": spending(plan(["one area"]), 100),
            "review-2": "VERDICT: PASS",
        }
    )
    outcome = run({**orchestrate(review={"agent": "recon"}), "maxGeneratedTokens": 450}, dispatch)
    assert dispatch.keys[:3] == ["decompose", "decompose-2", "review-2"]
    assert "Replan smaller: the plan cannot fit the flow budget" in dispatch.told("decompose-2")
    assert Decision("orchestrate.headroom", "decompose", "REPLAN", "budget") in outcome.decisions
    assert outcome.status is FlowStatus.COMPLETED

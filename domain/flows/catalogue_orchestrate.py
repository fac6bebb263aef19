"""The catalogue rows of ``orchestrate``'s codes (``domain.flows.catalogue`` holds them with the
rest): code, cause, fix, and whether the unchanged call could succeed if repeated."""

from __future__ import annotations

from domain.errors import ErrorCode

ORCHESTRATE_ROWS: tuple[tuple[ErrorCode, str, str, bool], ...] = (
    (
        ErrorCode.ORCHESTRATE_NO_SUBTASKS,
        "the orchestrate commander returned an empty list (or only blank subtasks), so there "
        "was nothing to work",
        "rephrase the goal so it names concrete work, or give orchestrate.commander a task "
        "template that asks for subtasks explicitly; then call again",
        True,
    ),
    (
        ErrorCode.DECOMPOSITION_INVALID,
        "the commander's answer is no JSON array of subtasks, mixes strings and objects, has "
        "more structured subtasks than maxSubtasks, or a subtask lacks a valid id or objective, "
        "names an unknown key or dependency, or sets effortWeight outside 1..5",
        "read the commander's answer in the results; call again, raise "
        "orchestrate.maxSubtasks, or add orchestrate.review to have the decomposition checked",
        True,
    ),
    (
        ErrorCode.DECOMPOSITION_CYCLE,
        "the subtasks' dependsOn edges form a cycle (named in the message), so no wave could "
        "ever start",
        "call again (the commander decomposes anew), or add orchestrate.review so a reviewer "
        "sends a cyclic plan back",
        True,
    ),
    (
        ErrorCode.DECOMPOSITION_REVIEW_FAILED,
        "the decomposition reviewer answered VERDICT: REVISE to every decomposition within "
        "orchestrate.reviewMaxIterations",
        "read the last critique in the results; narrow the goal, relax "
        "orchestrate.reviewCriteria, or raise orchestrate.reviewMaxIterations (1..4)",
        True,
    ),
    (
        ErrorCode.BUDGET_HEADROOM_EXCEEDED,
        "before a worker wave, the spend so far plus the remaining subtasks' effort weight "
        "times the spend per weight unit observed (the commander's before any worker) "
        "exceeded a flow ceiling (maxCostUsd, maxTokens or maxGeneratedTokens)",
        "keep the ceiling unless the user approves a change; narrow the goal or lower "
        "orchestrate.maxSubtasks so the plan fits, then call again",
        False,
    ),
    (
        ErrorCode.ORCHESTRATE_VERIFY_FAILED,
        "the orchestrate verifier answered VERDICT: REVISE under verifyPolicy fail, or still "
        "did after verifyMaxIterations debrief revisions under verifyPolicy revise",
        "read the verifier's critique in the results; fix what it names, or use verifyPolicy "
        "note to return the synthesis with the critique attached",
        False,
    ),
)

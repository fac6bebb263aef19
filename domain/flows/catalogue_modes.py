"""The catalogue rows of the judging, panel, searching and watching modes' codes (route, loop,
vote, debate, dossier, monitor, evaluate's check, search; ``domain.flows.catalogue`` holds them
with the rest): code, cause, fix, and whether the unchanged call could succeed if repeated."""

from __future__ import annotations

from domain.errors import ErrorCode

MODE_ROWS: tuple[tuple[ErrorCode, str, str, bool], ...] = (
    (
        ErrorCode.ROUTE_UNRESOLVED,
        "the route's controller chose none of the candidates (ROUTE: none, an answer with no "
        "exact ROUTE line, or one the handoff policy quarantined) and the call sets no fallback",
        "set route.fallback, add the agent that fits to route.candidates, or rephrase the task",
        True,
    ),
    (
        ErrorCode.LOOP_DID_NOT_CONVERGE,
        "no iteration ended the loop (the judge's VERDICT: PASS, or without a judge the body's "
        "LOOP: DONE) within loop.maxIterations; every iteration's output is in the results",
        "read the last critique, then raise loop.maxIterations or narrow the task",
        True,
    ),
    (
        ErrorCode.TOO_FEW_VOTERS,
        "a vote compares independent answers: it needs at least two voters (vote.voters with two "
        "or more entries, or vote.agent with vote.count of 2 or more); one voter is single mode",
        "give two or more vote.voters, or vote.agent with vote.count 2..8",
        False,
    ),
    (
        ErrorCode.DEBATE_TOO_FEW_PARTICIPANTS,
        "a debate needs two or more advocates: the call named fewer than two participants, or "
        "fewer than two advocates gave a usable argument in a round, so there is nothing to rebut",
        "give two or more debate.participants and fix the failed advocates the results name; "
        "for one proposal and its critique use evaluate",
        False,
    ),
    (
        ErrorCode.DOSSIER_TOO_FEW_SECTIONS,
        "a dossier reconciles at least two evidence sections: the call gave fewer than two, or "
        "fewer than two extractors succeeded, so a cross-source synthesis would mislead",
        "give two or more source-specific sections and fix the failed ones the results name; "
        "for one source use single mode",
        False,
    ),
    (
        ErrorCode.MONITOR_INVALID,
        "the monitor cannot probe: a field is out of its bounds, trigger match has no pattern "
        "or one Python's re cannot compile, or the probe command could not start",
        "fix the field the error's path names (docs/flows.md, monitor), then call again",
        False,
    ),
    (
        ErrorCode.MONITOR_NOT_TRIGGERED,
        "every probe ran (monitor.maxChecks of them) and none fired the trigger; the "
        "observations are in the result, and no reactor ran",
        "read the observations; call again later, adjust the trigger, or raise maxChecks or "
        "intervalMs when the longer bounded wait is intended",
        True,
    ),
    (
        ErrorCode.CHECK_COMMAND_FAILED,
        "evaluate's checkCommand could not start (the shell or the operator's directory is "
        "missing), or this host runs no check commands; a command that ran and exited non-zero "
        "is not this error (it sends the draft back for revision)",
        "check that the operator's cwd exists and the command runs there by hand; or drop "
        "evaluate.checkCommand",
        False,
    ),
    (
        ErrorCode.SEARCH_NO_CANDIDATES,
        "no generator run of the search's first round succeeded (each failed, or its return "
        "envelope was refused), so there was nothing to score",
        "read the failed candidate runs' errors in the results, fix their cause (agent, "
        "contract, budget), then call again",
        True,
    ),
)

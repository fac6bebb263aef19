"""The fields of the modes that take a role by reference (route, loop, dossier, monitor, vote,
debate, evaluate, search), as values with every default applied."""

from __future__ import annotations

import enum

import attrs

from domain.flows.call_roles import AgentRef, FlowTask
from domain.flows.tools import ToolChoice


def _controller() -> AgentRef:
    return AgentRef(agent="controller")


@attrs.frozen
class Route:
    """``route``: the controller picks one of ``candidates`` (or ``none``); ``fallback`` runs
    when it picks none or its answer cannot be read."""

    candidates: tuple[str, ...]
    controller: AgentRef = attrs.field(factory=_controller)
    fallback: str | None = None


DEFAULT_LOOP_ITERATIONS = 3
MAX_LOOP_ITERATIONS = 8


@attrs.frozen
class Loop:
    """``loop``: the body runs, then the judge (if any), until ``LOOP: DONE`` (no judge) or
    ``VERDICT: PASS``, at most ``max_iterations`` times."""

    body: AgentRef
    judge: AgentRef | None = None
    max_iterations: int = DEFAULT_LOOP_ITERATIONS


def _citing(sections: tuple[FlowTask, ...]) -> tuple[FlowTask, ...]:
    """Dossier sections: each cites its evidence unless it sets ``requireEvidence: false``."""
    return tuple(
        attrs.evolve(section, require_evidence=True)
        if section.require_evidence is None
        else section
        for section in sections
    )


@attrs.frozen
class Dossier:
    """``dossier``: 2..8 evidence sections extracted together, then ``debrief`` reconciles the
    ones that succeeded."""

    sections: tuple[FlowTask, ...] = attrs.field(converter=_citing)
    debrief: AgentRef = attrs.field(factory=lambda: AgentRef(agent="debrief"))


class Trigger(enum.StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    MATCH = "match"


@attrs.frozen
class Monitor:
    """``monitor``: ``command`` probed up to ``max_checks`` times, ``interval_ms`` apart, each
    probe stopped after ``check_timeout_ms`` (``None``: the call's ``timeoutMs``); the first
    probe that fires ``trigger`` hands its output to the one ``reactor``."""

    command: str
    trigger: Trigger = Trigger.SUCCESS
    # A case-insensitive Python regular expression searched in the probe's capped output.
    pattern: str | None = None
    interval_ms: int = 5000
    max_checks: int = 6
    check_timeout_ms: int | None = None
    reactor: AgentRef = attrs.field(factory=lambda: AgentRef(agent="analyst"))


@attrs.frozen
class Vote:
    """``vote``: ``voters`` (2..8 references), or ``agent`` asked ``count`` times; every voter
    answers the task on its own, then ``debrief`` (if any) merges the ballots."""

    voters: tuple[AgentRef, ...] = ()
    agent: str | None = None
    count: int = 3
    debrief: AgentRef | None = None

    def ballots(self) -> tuple[AgentRef, ...]:
        return self.voters or tuple(AgentRef(agent=self.agent or "") for _ in range(self.count))

    def roles(self) -> list[tuple[str, AgentRef]]:
        named = [f"$.vote.voters[{i}]" for i in range(len(self.voters))]
        # Each of ``count`` voters is the ``vote`` object's ``agent`` (``$.vote.agent``).
        where = named or ["$.vote"] * self.count
        debrief = [] if self.debrief is None else [("$.vote.debrief", self.debrief)]
        return [*zip(where, self.ballots(), strict=True), *debrief]


@attrs.frozen
class Debate:
    """``debate``: 2..8 ``participants`` argue ``rounds`` times, then ``adjudicator`` decides."""

    participants: tuple[AgentRef, ...]
    adjudicator: AgentRef = attrs.field(factory=lambda: AgentRef(agent="analyst"))
    rounds: int = 2

    def roles(self) -> list[tuple[str, AgentRef]]:
        people = [(f"$.debate.participants[{i}]", p) for i, p in enumerate(self.participants)]
        return [*people, ("$.debate.adjudicator", self.adjudicator)]


DEFAULT_EVALUATE_ITERATIONS = 3
# Default bound of an evaluate's check command (pi-flows' default check wall clock).
CHECK_TIMEOUT_MS = 300_000


@attrs.frozen
class Evaluate:
    """``evaluate``: the operator drafts, the check command (if any) runs in its directory, the
    critics (``redteam``: one ref or a panel) judge; revised until the check exits 0 and every
    critic says ``VERDICT: PASS``, at most ``max_iterations`` rounds."""

    operator: AgentRef = attrs.field(factory=lambda: AgentRef(agent="operator"))
    redteam: AgentRef | tuple[AgentRef, ...] = attrs.field(
        factory=lambda: AgentRef(agent="redteam")
    )
    check_command: str | None = None
    max_iterations: int = DEFAULT_EVALUATE_ITERATIONS
    # Appended to each critic's rubric.
    pass_contract: str | None = None

    @property
    def critics(self) -> tuple[AgentRef, ...]:
        return self.redteam if isinstance(self.redteam, tuple) else (self.redteam,)


@attrs.frozen
class Search:
    """``search``: ``candidates`` generated and scored each round (``SCORE: n``), the best
    ``beam_width`` kept and refined for ``max_rounds`` rounds, the winner debriefed."""

    generator: AgentRef = attrs.field(factory=lambda: AgentRef(agent="strategist"))
    scorer: AgentRef = attrs.field(factory=lambda: AgentRef(agent="redteam", tools=ToolChoice(())))
    debrief: AgentRef = attrs.field(factory=lambda: AgentRef(agent="debrief"))
    candidates: int = 3
    beam_width: int = 1
    max_rounds: int = 2

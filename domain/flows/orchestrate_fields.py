"""``orchestrate``'s fields as a value with every default applied (flows-brief §2): who
decomposes, who may review the decomposition, who works each subtask, who synthesises and who
may verify the synthesis, and the bounds of each loop."""

from __future__ import annotations

import enum

import attrs

from domain.errors import ErrorCode
from domain.flows.call_roles import AgentRef, FlowTask
from domain.flows.errors import refuse

DEFAULT_MAX_SUBTASKS = 8
MAX_SUBTASKS = 16
DEFAULT_REVIEW_ITERATIONS = 2
DEFAULT_VERIFY_ITERATIONS = 2
MAX_ORCHESTRATE_ITERATIONS = 4

# Where the one worker role every subtask runs as is defined.
WORKER_PATH = "$.orchestrate.recon"


class VerifyPolicy(enum.StrEnum):
    """What a verifier's ``VERDICT: REVISE`` does: noted in the result, fails the flow
    (``ORCHESTRATE_VERIFY_FAILED``), or reruns the debrief with the critique."""

    NOTE = "note"
    FAIL = "fail"
    REVISE = "revise"


def bare(role: FlowTask) -> FlowTask:
    """A role that answers in a fixed shape (a JSON decomposition, a verdict): the call's prose
    return requirements are not appended to it, its own still are."""
    return attrs.evolve(
        role,
        return_contract="" if role.return_contract is None else role.return_contract,
        require_evidence=bool(role.require_evidence),
    )


@attrs.frozen
class Orchestrate:
    """``orchestrate``: ``commander`` decomposes the goal into at most ``max_subtasks``
    subtasks; ``review`` (if any) may send the decomposition back up to
    ``review_max_iterations`` times; ``recon`` works each subtask in dependency waves;
    ``debrief`` synthesises; ``verify`` (if any) judges the synthesis under ``verify_policy``."""

    # The goal when the call has no top-level ``task``.
    task: str | None = None
    commander: AgentRef = attrs.field(factory=lambda: AgentRef(agent="commander"))
    review: AgentRef | None = None
    review_max_iterations: int = DEFAULT_REVIEW_ITERATIONS
    review_criteria: str | None = None
    recon: AgentRef = attrs.field(factory=lambda: AgentRef(agent="recon"))
    debrief: AgentRef = attrs.field(factory=lambda: AgentRef(agent="debrief"))
    verify: AgentRef | None = None
    verify_policy: VerifyPolicy = VerifyPolicy.NOTE
    verify_max_iterations: int = DEFAULT_VERIFY_ITERATIONS
    # Return requirements of the workers only (``return_contract`` is its alias); the call's
    # ``returnContract`` still applies to the synthesis.
    worker_return_contract: str | None = None
    return_contract: str | None = None
    max_subtasks: int = DEFAULT_MAX_SUBTASKS

    def goal(self, task: str | None) -> str:
        """The call's ``task``, else this object's."""
        return task or self.task or ""

    def worker_requirements(self) -> str | None:
        return (
            self.worker_return_contract
            if self.worker_return_contract is not None
            else self.return_contract
        )

    def worker(self, goal: str) -> FlowTask:
        """The role every subtask runs as, told the workers' own return requirements."""
        role = self.recon.as_task(goal)
        required = self.worker_requirements()
        return role if required is None else attrs.evolve(role, return_contract=required)

    def roles(self, task: str | None) -> list[tuple[str, FlowTask]]:
        """Every role admission checks, with its JSON path: one worker role stands for every
        subtask, since the subtasks are only known once the commander answered."""
        goal = self.goal(task)
        if not goal.strip():
            raise refuse(
                ErrorCode.FLOW_INVALID,
                "$.task",
                "orchestrate needs a goal: the call's task or orchestrate.task",
                measured="absent",
                allowed="a non-empty task",
            )
        # The roles exactly as their jobs carry them: admission resolves each by its value.
        found = [
            ("$.orchestrate.commander", bare(self.commander.as_task(goal))),
            (WORKER_PATH, self.worker(goal)),
            ("$.orchestrate.debrief", self.debrief.as_task(goal)),
        ]
        if self.review is not None:
            found.insert(1, ("$.orchestrate.review", bare(self.review.as_task(goal))))
        if self.verify is not None:
            found.append(("$.orchestrate.verify", bare(self.verify.as_task(goal))))
        return found

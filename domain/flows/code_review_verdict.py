"""The ``code-review`` preset's outcome (docs/flows.md, "code-review"): ``CLEAN``, ``FINDINGS``
or ``PARTIAL``, from the pinned range and the two reviews' typed returns.

A review counts only when its run completed with a validated return envelope of status
``completed`` whose ``data`` attests the pinned ``base`` and ``head`` and covers every changed
file as ``reviewed``. Anything short of that (a range that did not resolve, a run that failed,
a wrong id, a path missing or skipped) makes the outcome ``PARTIAL``, with each reason named:
a review that did not see the whole change set cannot say it is clean.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from domain.flows.code_review import AXES, PinnedRange
from domain.flows.mode_parts import FlowOutcome, FlowStatus
from domain.flows.runs import RunResult

SEVERITIES = ("critical", "high", "medium", "low")


class ReviewOutcome(enum.StrEnum):
    CLEAN = "CLEAN"
    FINDINGS = "FINDINGS"
    PARTIAL = "PARTIAL"


@attrs.frozen
class ReviewVerdict:
    """The outcome, why a ``PARTIAL`` one is partial, and the findings by severity."""

    outcome: ReviewOutcome
    reasons: tuple[str, ...] = ()
    severities: tuple[tuple[str, int], ...] = ()
    pinned: PinnedRange | None = None

    @property
    def findings(self) -> int:
        return sum(count for _, count in self.severities)

    def document(self) -> dict[str, Any]:
        """The ``codeReview`` object of the flow's ``--json`` document (content-free: the
        findings themselves are in each review's return envelope)."""
        return {
            "result": "code-review-v1",
            "presetOutcome": str(self.outcome),
            "range": None if self.pinned is None else self.pinned.document(),
            "findings": {"total": self.findings, "bySeverity": dict(self.severities)},
            "reasons": list(self.reasons),
        }

    def headline(self) -> str:
        """The summary's first sentence: ``Flow code-review: FINDINGS — ...``."""
        scope = ""
        if self.pinned is not None:
            files = len(self.pinned.manifest)
            scope = (
                f" across {files} changed file{'' if files == 1 else 's'} of "
                f"{self.pinned.base[:12]}..{self.pinned.head[:12]} "
                f"({self.pinned.requested.text()})"
            )
        if self.outcome is ReviewOutcome.PARTIAL:
            more = f" (and {len(self.reasons) - 1} more)" if len(self.reasons) > 1 else ""
            return f"Flow code-review: PARTIAL{scope}: {self.reasons[0]}{more}."
        if self.outcome is ReviewOutcome.CLEAN:
            return f"Flow code-review: CLEAN, no findings{scope}."
        counted = ", ".join(f"{n} {severity}" for severity, n in self.severities if n)
        return f"Flow code-review: FINDINGS, {self.findings} ({counted}){scope}."


def unresolved(reason: str) -> ReviewVerdict:
    """The verdict of a review whose range did not resolve: nothing was dispatched."""
    return ReviewVerdict(ReviewOutcome.PARTIAL, (reason,))


def judge(pinned: PinnedRange, results: Sequence[RunResult]) -> ReviewVerdict:
    """Both reviews' returns held to the pinned range."""
    reasons: list[str] = []
    findings: Counter[str] = Counter()
    for axis in AXES:
        data, problem = _typed_return(axis, results)
        if problem is not None:
            reasons.append(problem)
            continue
        reasons += _attested(axis, data, pinned)
        findings.update(
            str(f.get("severity")) for f in data.get("findings", ()) if isinstance(f, Mapping)
        )
    severities = tuple((severity, findings[severity]) for severity in SEVERITIES)
    if reasons:
        return ReviewVerdict(ReviewOutcome.PARTIAL, tuple(reasons), severities, pinned)
    outcome = ReviewOutcome.FINDINGS if findings.total() else ReviewOutcome.CLEAN
    return ReviewVerdict(outcome, (), severities, pinned)


def _typed_return(axis: str, results: Sequence[RunResult]) -> tuple[Mapping[str, Any], str | None]:
    """The ``data`` of the review of ``axis`` (the typed return whose ``data.axis`` names it:
    its schema's ``const``), or why there is none to count."""
    run = next((r for r in results if r.envelope is not None and _axis(r.envelope) == axis), None)
    if run is None or run.envelope is None:
        failed = [r for r in results if not r.ok or r.envelope is None]
        why = "; ".join(f"{r.key} {r.status} ({r.error_code or 'no typed return'})" for r in failed)
        return {}, f"no typed return from the {axis} review" + (f": {why}" if why else "")
    status = run.envelope.get("status")
    if status != "completed":
        return {}, f"the {axis} review ({run.key}) returned status {status}"
    return run.envelope["data"], None


def _axis(envelope: Mapping[str, Any]) -> object:
    data = envelope.get("data")
    return data.get("axis") if isinstance(data, Mapping) else None


def _attested(axis: str, data: Mapping[str, Any], pinned: PinnedRange) -> list[str]:
    reasons = [
        f"the {axis} review attests {end} {data.get(end)!r}, the pinned {end} is {want}"
        for end, want in (("base", pinned.base), ("head", pinned.head))
        if data.get(end) != want
    ]
    coverage = {
        str(c.get("path")): c.get("status")
        for c in data.get("coverage", ())
        if isinstance(c, Mapping)
    }
    paths = [f.path for f in pinned.manifest]
    missing = [p for p in paths if p not in coverage]
    skipped = [p for p in paths if coverage.get(p) == "skipped"]
    for word, left in (("does not cover", missing), ("skipped", skipped)):
        if left:
            reasons.append(
                f"the {axis} review {word} {len(left)} of {len(paths)} changed files "
                f"(first: {left[0]!r})"
            )
    return reasons


def settled_review(outcome: FlowOutcome, verdict: ReviewVerdict) -> FlowOutcome:
    """The flow's outcome with the verdict leading its summary; a ``PARTIAL`` review of runs
    that all completed is a partial flow (its exit status says so)."""
    status = outcome.status
    if verdict.outcome is ReviewOutcome.PARTIAL and status is FlowStatus.COMPLETED:
        status = FlowStatus.PARTIAL
    return attrs.evolve(outcome, status=status, summary=f"{verdict.headline()} {outcome.summary}")

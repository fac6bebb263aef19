"""The ``code-review`` harness (docs/flows.md, "code-review"): before dispatch it resolves the
range the task names with Git, in the call's working directory, and pins both commit ids and
the changed-file manifest into the task both reviews are given; after the runs it holds their
typed returns to that pin and settles ``CLEAN``, ``FINDINGS`` or ``PARTIAL``.

A preset is this harness's when its frontmatter says ``result: code-review-v1``. A range that
does not resolve dispatches nothing: the flow settles ``PARTIAL`` at once, naming why.
"""

from __future__ import annotations

import posixpath
from typing import Any

import attrs

from application.flows.flow_report import FlowReport
from application.ports import GitRange, PresetDirectory
from domain.flows.call import FlowCall
from domain.flows.code_review import (
    CODE_REVIEW_RESULT,
    PinnedRange,
    RangeForm,
    RequestedRange,
    parse_range,
)
from domain.flows.code_review_verdict import ReviewVerdict, judge, settled_review, unresolved
from domain.flows.mode_parts import FlowOutcome, FlowStatus
from domain.flows.roles import SCOPES

# ``GitRange`` too: the runner takes one (its port) to build the harness with.
__all__ = ["CodeReview", "CodeReviews", "GitRange", "resolve", "verdict_details"]


@attrs.frozen
class CodeReview:
    """One code-review call: its pinned range, or why the range did not resolve."""

    pinned: PinnedRange | None
    reason: str | None = None

    def settle(
        self, outcome: FlowOutcome, details: dict[str, Any]
    ) -> tuple[FlowOutcome, dict[str, Any]]:
        """The flow's outcome with the verdict, and ``details`` with what ``--json`` adds."""
        verdict = judge(self.pinned, outcome.results) if self.pinned else self.verdict()
        return settled_review(outcome, verdict), {**details, **verdict_details(verdict)}

    def verdict(self) -> ReviewVerdict:
        return unresolved(self.reason or "the range did not resolve")

    def undispatched(self, flow_id: str, call: FlowCall) -> FlowReport:
        """The report of a review whose range did not resolve: failed, nothing dispatched."""
        verdict = self.verdict()
        summary = f"{verdict.headline()} No review was dispatched."
        outcome = FlowOutcome(call.mode, FlowStatus.FAILED, (), summary)
        return FlowReport(flow_id, call, outcome, details=verdict_details(verdict))


def verdict_details(verdict: ReviewVerdict) -> dict[str, Any]:
    """The stable ``presetOutcome`` field and the ``codeReview`` object of ``--json``."""
    return {"presetOutcome": str(verdict.outcome), "codeReview": verdict.document()}


class CodeReviews:
    """Recognises a code-review preset call and pins its range. ``git``: ``None`` where Git
    cannot be asked (a code-review call then settles ``PARTIAL`` without dispatching)."""

    def __init__(self, git: GitRange | None, presets: PresetDirectory) -> None:
        self._git = git
        self._presets = presets

    def prepare(self, document: object, cwd: str) -> tuple[object, CodeReview | None]:
        """``document`` with the pinned range after its task, and the review; a call that is
        not a code-review preset call (or that expansion will refuse) comes back unchanged."""
        if not isinstance(document, dict) or not isinstance(document.get("task"), str):
            return document, None
        scope, name = document.get("agentScope", "user"), document.get("preset")
        if not isinstance(scope, str) or scope not in SCOPES or not isinstance(name, str):
            return document, None
        preset = next(
            (p for p in self._presets.catalog(cwd).in_scope(scope) if p.name == name), None
        )
        if preset is None or preset.result != CODE_REVIEW_RESULT:
            return document, None
        given = document.get("cwd") if "cwd" in preset.overrides else None
        where = given if isinstance(given, str) else preset.body.get("cwd")
        repository = posixpath.normpath(
            posixpath.join(cwd, where if isinstance(where, str) else "")
        )
        review = self._pin(document["task"], repository)
        if review.pinned is None:
            return document, review
        return {**document, "task": document["task"] + review.pinned.brief()}, review

    def _pin(self, task: str, repository: str) -> CodeReview:
        requested = parse_range(task)
        if isinstance(requested, str):
            return CodeReview(None, requested)
        if self._git is None:
            return CodeReview(None, "Git cannot be asked here, so the range cannot be pinned")
        git = self._git
        # Each candidate resolved: prose may say "against" more than once.
        pinned = [p for p in (resolve(git, r, repository) for r in requested) if p is not None]
        if len(pinned) == 1:
            return CodeReview(pinned[0])
        named = ", ".join(r.text() for r in requested)
        if pinned:
            return CodeReview(None, f"{len(pinned)} of the ranges {named} resolve: name one")
        return CodeReview(
            None,
            f"{named} does not resolve in the call's working directory: a ref names no "
            "commit there, or a three-dot range has no merge base (check each ref with: "
            "git rev-parse --verify <ref>)",
        )


def resolve(git: GitRange, requested: RequestedRange, repository: str) -> PinnedRange | None:
    """``requested`` pinned to commits in ``repository``: a three-dot range at the merge base
    of both refs; ``None`` when a ref names no commit or the diff cannot be read."""
    base = git.commit(repository, requested.base)
    head = git.commit(repository, requested.head)
    if base is None or head is None:
        return None
    if requested.form is RangeForm.THREE_DOT:
        base = git.merge_base(repository, base, head)
        if base is None:
            return None
    manifest = git.changed_files(repository, base, head)
    if manifest is None:
        return None
    return PinnedRange(requested, base, head, manifest)

"""The ``code-review`` preset's range (docs/flows.md, "code-review"): the Git range its task
names, as the harness reads it before dispatch, and the pinned range both reviews are given.

The task names the range in one of three forms (seed 004): ``base..head`` (the two endpoints),
``base...head`` (pinned at the merge base of both, so the manifest is the branch's own change
set) or ``head against base`` (the two endpoints, as ``base..head``). The harness resolves both
refs with Git (``application.flows.code_review``); these are the values it reads and pins.
"""

from __future__ import annotations

import enum
import re

import attrs

# A preset's ``result`` naming this harness (frontmatter ``result: code-review-v1``).
CODE_REVIEW_RESULT = "code-review-v1"
# The two review axes, in task order: each task's contract ``owner`` and ``data.axis``.
AXES = ("standards", "spec")
# A ref as a task may name it: never an option (no leading ``-``), no ``..`` inside (Git
# forbids it in a ref name), no whitespace; revision suffixes (``~2``, ``^``, ``@{1}``) pass.
_REF = re.compile(r"^(?!.*\.\.)[A-Za-z0-9_@^~/{}][A-Za-z0-9_@^~/{}.+-]*$")
# What may trail a token in prose (``main..feature,``); a ref cannot end with ``.`` anyway.
_TRAILING = ",;:!?)]'\"`."
_LEADING = "([`'\""


class RangeForm(enum.StrEnum):
    TWO_DOT = "two-dot"
    THREE_DOT = "three-dot"
    AGAINST = "against"


@attrs.frozen
class RequestedRange:
    """The range as the task names it: refs, not yet resolved."""

    form: RangeForm
    base: str
    head: str

    def text(self) -> str:
        if self.form is RangeForm.AGAINST:
            return f"{self.head} against {self.base}"
        dots = "..." if self.form is RangeForm.THREE_DOT else ".."
        return f"{self.base}{dots}{self.head}"


@attrs.frozen
class ChangedFile:
    """One line of ``git diff --name-status --no-renames``: its status letter and path."""

    status: str
    path: str


@attrs.frozen
class PinnedRange:
    """The range resolved to commits before dispatch: ``base`` is the merge base for a
    three-dot range, ``manifest`` what ``git diff --name-status base head`` lists."""

    requested: RequestedRange
    base: str
    head: str
    manifest: tuple[ChangedFile, ...]

    def document(self) -> dict[str, object]:
        return {
            "requested": self.requested.text(),
            "form": str(self.requested.form),
            "base": self.base,
            "head": self.head,
            "manifest": [{"status": f.status, "path": f.path} for f in self.manifest],
        }

    def brief(self) -> str:
        """What both review tasks are given after the caller's task: the ids to attest and
        every path to cover."""
        merge_base = (
            " (the merge base of both refs: the branch's own change set)"
            if self.requested.form is RangeForm.THREE_DOT
            else ""
        )
        lines = [
            "",
            "",
            "Pinned range (resolved by the harness before this review started; review exactly "
            "this, do not re-resolve the refs):",
            f"- requested: {self.requested.text()}",
            f"- base: {self.base}{merge_base}",
            f"- head: {self.head}",
            f"- changed files (git diff --name-status {self.base} {self.head}): "
            f"{len(self.manifest)}",
            *(f"  {f.status}\t{_shown(f.path)}" for f in self.manifest),
            "Set data.base and data.head to exactly these two ids, and give one coverage record "
            "per changed file above (reviewed, or skipped with the reason as evidence).",
        ]
        return "\n".join(lines)


def _shown(path: str) -> str:
    # A path with a newline or a control character would forge lines of the brief: quoted.
    return path if path.isprintable() else repr(path)


def parse_range(task: str) -> tuple[RequestedRange, ...] | str:
    """The ranges ``task`` may name, or why it names none. A dotted range (``base..head``,
    ``base...head``) is taken over any ``against`` phrase; several ``against`` phrases are
    candidates (prose says "against" too: "check it against the spec"), and the harness keeps
    the one whose refs resolve. More than one dotted range is one too many."""
    tokens = [t.lstrip(_LEADING).rstrip(_TRAILING) for t in task.split()]
    dotted = [found for found in map(_dotted, tokens) if found is not None]
    if len(dotted) > 1:
        named = ", ".join(r.text() for r in dotted)
        return f"the task names {len(dotted)} Git ranges ({named}): name exactly one"
    if dotted:
        return (dotted[0],)
    against = tuple(
        RequestedRange(RangeForm.AGAINST, after, before)
        for before, word, after in zip(tokens, tokens[1:], tokens[2:], strict=False)
        if word.lower() == "against" and _REF.match(before) and _REF.match(after)
    )
    return against or (
        "the task names no Git range: write base..head, base...head or '<head> against <base>'"
    )


def _dotted(token: str) -> RequestedRange | None:
    form, dots = (RangeForm.THREE_DOT, "...") if "..." in token else (RangeForm.TWO_DOT, "..")
    base, found, head = token.partition(dots)
    if not found or not _REF.match(base) or not _REF.match(head):
        return None
    return RequestedRange(form, base, head)

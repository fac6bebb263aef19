"""What wraps any spawning mode (docs/flows.md, "Checkpoint and reflexion"): the person's
``checkpoint`` before the first child or before the result returns, asked the way a project
agent's approval is (the session's ``confirm`` question), and ``reflexion``'s lessons, read into
the top-level task before the mode runs and one appended after a run that spawned a child.

A checkpoint in a run that cannot ask anybody (the CLI, a Pi without a UI) is refused before any
child spawns, whichever point it names: a question nobody can answer would otherwise only be
reached after the children's cost was spent.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import attrs

from application.flows.tracing import FlowTrace
from application.ports import FileSystem, ReadFailure, StableReadError
from domain.errors import ErrorCode
from domain.flows import reflexion as lessons
from domain.flows.call import FlowCall
from domain.flows.errors import FlowError, Problem, refuse
from domain.flows.mode_parts import FlowOutcome
from domain.flows.trace_spans import APPROVAL_OUTCOME, EventKind
from domain.flows.wrappers import Checkpoint, CheckpointPoint

# Asks the person a yes/no question (title, message): ``True`` when they approved.
Confirm = Callable[[str, str], bool]

CHECKPOINT_TITLE = "pi-squad flow: checkpoint"
CHECKPOINT_PATH = "$.checkpoint"
# The reflections file is read whole: the writer keeps it far below this.
MAX_REFLECTIONS_BYTES = 1024 * 1024
REFLECTIONS_DIR_MODE = 0o700


@attrs.frozen
class Checkpoints:
    """The call's checkpoint over one run: who can be asked (``None``: nobody), the trace the
    answers are recorded in, and the run's cancellation (a flow cancelled while the question
    is open is cancelled, not refused)."""

    checkpoint: Checkpoint | None
    confirm: Confirm | None
    trace: FlowTrace | None
    cancelled: threading.Event

    def before_spawn(self, call: FlowCall) -> None:
        """Refuses a checkpoint nobody can answer (``CHECKPOINT_APPROVAL_REQUIRED``), then asks
        a ``spawn`` checkpoint (``CHECKPOINT_APPROVAL_DENIED`` when declined)."""
        if self.checkpoint is None:
            return
        if self.confirm is None:
            raise refuse(
                ErrorCode.CHECKPOINT_APPROVAL_REQUIRED,
                f"{CHECKPOINT_PATH}.before",
                f"the call asks a person before {self.checkpoint.before}, and this run has "
                "nobody to ask (no Pi UI); nothing was spawned",
                measured=str(self.checkpoint.before),
            )
        if self.checkpoint.before is CheckpointPoint.SPAWN:
            question = spawn_question(call, self.checkpoint)
            if not self._asked(question):
                raise denied(self.checkpoint, "nothing was spawned")

    def before_return(self, outcome: FlowOutcome, spawned: int) -> FlowError | None:
        """Asks a ``finalize`` checkpoint once the children settled: the refusal to raise once
        the run is recorded when the person declined, else ``None``."""
        if self.checkpoint is None or self.checkpoint.before is not CheckpointPoint.FINALIZE:
            return None
        if self._asked(finalize_question(outcome, spawned, self.checkpoint)):
            return None
        return denied(self.checkpoint, f"{spawned} child(ren) ran; their results are withheld")

    def _asked(self, message: str) -> bool:
        """The person's answer, recorded as a ``checkpoint.granted|declined`` event; a run
        cancelled before or during the question counts as approved (it spawns nothing more
        and answers ``cancelled``)."""
        assert self.checkpoint is not None
        assert self.confirm is not None
        if self.cancelled.is_set():
            return True
        approved = self.confirm(CHECKPOINT_TITLE, message)
        if self.cancelled.is_set():
            return True
        if self.trace is not None:
            outcome = "granted" if approved else "declined"
            self.trace.event(
                f"checkpoint.{outcome}",
                EventKind.APPROVAL,
                reason=f"checkpoint before {self.checkpoint.before} {outcome}",
                attributes={APPROVAL_OUTCOME: outcome},
            )
        return approved


def denied(checkpoint: Checkpoint, what: str) -> FlowError:
    return FlowError(
        Problem(
            ErrorCode.CHECKPOINT_APPROVAL_DENIED,
            f"{CHECKPOINT_PATH}.before",
            f"the person declined the checkpoint before {checkpoint.before}; {what}",
            str(checkpoint.before),
        )
    )


def spawn_question(call: FlowCall, checkpoint: Checkpoint) -> str:
    agents = sorted({role.agent for _, role in call.roles()})
    lines = [
        f"Flow {call.mode} is about to spawn its children ({', '.join(agents)}): {call.why}",
        *([checkpoint.message] if checkpoint.message else []),
        "Continue? Declining refuses the call; nothing is spawned.",
    ]
    return "\n".join(lines)


def finalize_question(outcome: FlowOutcome, spawned: int, checkpoint: Checkpoint) -> str:
    done = sum(result.ok for result in outcome.results)
    lines = [
        f"Flow {outcome.mode} settled {outcome.status}: {done}/{len(outcome.results)} runs "
        f"completed, {spawned} child(ren) spawned.",
        *([checkpoint.message] if checkpoint.message else []),
        "Return its result? Declining withholds it (CHECKPOINT_APPROVAL_DENIED).",
    ]
    return "\n".join(lines)


# -- reflexion -------------------------------------------------------------------------------


@attrs.frozen
class Reflections:
    """An enabled ``reflexion`` of one run: the file (absolute), the call's directory it must
    stay in, the lessons given to the task, and the task as the call gave it."""

    path: str
    base: str
    given: int
    task: str | None

    def document(self, recorded: bool, error: str | None = None) -> dict[str, Any]:
        found: dict[str, Any] = {
            "file": posixpath.relpath(self.path, self.base),
            "lessonsGiven": self.given,
            "lessonRecorded": recorded,
        }
        if error is not None:
            found["error"] = error
        return found


def read_reflections(
    call: FlowCall, fs: FileSystem, base_cwd: str
) -> tuple[FlowCall, Reflections | None]:
    """The call with its recent lessons appended to its top-level task (a call without one,
    ``parallel``, is given none), before admission resolves its roles. ``FLOW_INVALID`` at
    ``$.reflexion.file`` for a path outside the call's directory, through a symbolic link, or
    a file that cannot be read."""
    wanted = call.reflexion
    if wanted is None or not wanted.enabled:
        return call, None
    base = posixpath.normpath(posixpath.join(base_cwd, call.cwd or ""))
    path = lessons.reflections_path(base, wanted.file)
    _check_directories(fs, base, path)
    recent = lessons.recent(_content(fs, path), wanted.max_entries)
    found = Reflections(path, base, len(recent) if call.task else 0, call.task)
    if call.task is None or not recent:
        return call, found
    return attrs.evolve(call, task=lessons.with_lessons(call.task, recent)), found


def record_lesson(
    reflections: Reflections,
    outcome: FlowOutcome,
    fs: FileSystem,
    *,
    flow_id: str,
    at: datetime,
    home: str | None,
    withheld: bool = False,
) -> dict[str, Any]:
    """Appends the run's one lesson: the whole file rewritten atomically (owner-only, 0600) by
    the file system port. A failure to write is reported in ``details.reflexion``, never
    turned into the flow's failure: the children's work is done."""
    lesson = lessons.lesson_of(
        outcome, reflections.task, flow_id=flow_id, at=at, home=home, withheld=withheld
    )
    try:
        _check_directories(fs, reflections.base, reflections.path)
        for directory in lessons.directories_between(reflections.base, reflections.path):
            if not fs.exists(directory):
                fs.ensure_dir(directory, REFLECTIONS_DIR_MODE)
        data = _content(fs, reflections.path)
        fs.write_atomic(reflections.path, lessons.appended(data, lesson))
    except (OSError, FlowError) as error:
        reason = error.message if isinstance(error, FlowError) else f"could not write: {error}"
        return reflections.document(False, reason)
    return reflections.document(True)


def _check_directories(fs: FileSystem, base: str, path: str) -> None:
    for directory in lessons.directories_between(base, path):
        if fs.exists(directory) and not fs.is_dir(directory):
            raise refuse(
                ErrorCode.FLOW_INVALID,
                lessons.FILE_PATH,
                f"{posixpath.relpath(directory, base)!r} is a symbolic link or not a directory; "
                "the reflections file must stay inside the call's directory",
            )


def _content(fs: FileSystem, path: str) -> bytes:
    try:
        return fs.read_small(path, MAX_REFLECTIONS_BYTES)
    except StableReadError as error:
        if error.failure is ReadFailure.MISSING:
            return b""
        raise refuse(
            ErrorCode.FLOW_INVALID,
            lessons.FILE_PATH,
            f"the reflections file cannot be read: {error.failure.value}",
        ) from None


@attrs.frozen
class CallWrappers:
    """A spawning call's checkpoint and reflexion over one run (``read`` them before
    admission, then ``asking`` whom and ``before_spawn``, then ``settle`` after the mode)."""

    call: FlowCall
    reflections: Reflections | None
    fs: FileSystem
    home: str | None
    flow_id: str
    checkpoints: Checkpoints | None = None

    @classmethod
    def read(
        cls, call: FlowCall, fs: FileSystem, cwd: str, home: str | None, flow_id: str
    ) -> tuple[FlowCall, CallWrappers]:
        """The call with its recent lessons in its task (``read_reflections``), and its
        wrappers."""
        changed, reflections = read_reflections(call, fs, cwd)
        return changed, cls(changed, reflections, fs, home, flow_id)

    def asking(
        self, confirm: Confirm | None, trace: FlowTrace | None, cancelled: threading.Event
    ) -> CallWrappers:
        """Asks ``confirm`` at the checkpoint (refused when nobody can be asked, see
        ``Checkpoints.before_spawn``) and records each answer in ``trace``."""
        found = Checkpoints(self.call.checkpoint, confirm, trace, cancelled)
        found.before_spawn(self.call)
        return attrs.evolve(self, checkpoints=found)

    def settle(
        self, outcome: FlowOutcome, spawned: int, at: datetime, details: dict[str, Any]
    ) -> FlowError | None:
        """After the mode: the ``finalize`` checkpoint's refusal (``None`` when approved or not
        asked), then the run's lesson when it spawned a child (also when the result was
        withheld: the lesson then keeps nothing of it), said in ``details.reflexion``."""
        denial = (
            None if self.checkpoints is None else self.checkpoints.before_return(outcome, spawned)
        )
        if self.reflections is not None:
            details["reflexion"] = (
                record_lesson(
                    self.reflections,
                    outcome,
                    self.fs,
                    flow_id=self.flow_id,
                    at=at,
                    home=self.home,
                    withheld=denial is not None,
                )
                if spawned
                else self.reflections.document(False)
            )
        return denial

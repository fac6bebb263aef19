"""The optional advisor of the monitor's escalations, pure: its setting, what it is told and
how its answer becomes one steer.

Off unless ``PI_SQUAD_ADVISOR_MODEL`` names a model. When the monitor escalates an idle child,
one short-lived advisor child is asked for one steering sentence; it is told the task's id,
agent and status, how long the child has been quiet, and the recent history reduced to times,
kinds and tool names. It is never told free text: what a child or the orchestrator wrote, and
even the scheduler's own lines (which quote a child's stderr), can quote the canonical spec, and
the advisor must never see spec content.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

import attrs

from domain.errors import ErrorCode, SquadOperationError
from domain.squad.messages import Message, MessageKind
from domain.squad.model import Task

ADVISOR_MODEL_VARIABLE = "PI_SQUAD_ADVISOR_MODEL"
ADVISOR_TIMEOUT_VARIABLE = "PI_SQUAD_ADVISOR_TIMEOUT_MS"
DEFAULT_ADVISOR_TIMEOUT_SECONDS = 120.0
HISTORY_LINES = 20
MAX_ADVICE_CHARS = 300

# A model pattern as Pi's ``--model`` takes it (``provider/id``, an optional ``:thinking``):
# no whitespace, and never a leading ``-`` that Pi's argument parser would read as a flag.
_MODEL = re.compile(r"[A-Za-z0-9_.:@+][A-Za-z0-9_.:@+/-]{0,199}")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")

ADVISOR_SYSTEM_PROMPT = (
    "You advise the orchestrator of a squad of coding agents about one agent that has gone "
    "quiet. You see only facts about its task (ids, status, times, the tools it used), never "
    "its instructions or what it wrote. Reply with exactly one sentence, addressed to the "
    "agent, saying what it should do next to get moving again. No preamble, no list."
)


@attrs.frozen
class AdvisorSettings:
    """``model``: Pi's ``--model``; ``provider``: ``--provider`` (``None``: the runtime's);
    ``timeout``: seconds the advisor may take before the escalation falls back."""

    model: str
    provider: str | None = None
    timeout: float = DEFAULT_ADVISOR_TIMEOUT_SECONDS

    @property
    def name(self) -> str:
        return self.model if self.provider is None else f"{self.provider}/{self.model}"


def advisor_from_environment(environ: Mapping[str, str]) -> AdvisorSettings | None:
    """The advisor the environment asks for, or ``None`` (unset or empty: no advisor, ever).

    ``PROVIDER/MODEL`` sets both (split at the first ``/``, so a model id may hold more);
    ``MODEL`` alone keeps the children's provider. A malformed value is refused naming the
    variable, its value and what is allowed."""
    raw = environ.get(ADVISOR_MODEL_VARIABLE, "").strip()
    if not raw:
        return None
    provider, _, model = raw.partition("/") if "/" in raw else ("", "", raw)
    if not _MODEL.fullmatch(raw) or (provider == "" and "/" in raw) or not model:
        raise SquadOperationError(
            ErrorCode.OPERATION_REFUSED,
            f"{ADVISOR_MODEL_VARIABLE} is {raw!r}; allowed: PROVIDER/MODEL or MODEL, as Pi's "
            "--model takes it (letters, digits and . _ : @ + / -, not starting with -)",
        )
    timeout = DEFAULT_ADVISOR_TIMEOUT_SECONDS
    raw_timeout = environ.get(ADVISOR_TIMEOUT_VARIABLE, "").strip()
    if raw_timeout:
        if not raw_timeout.isdigit() or int(raw_timeout) <= 0:
            raise SquadOperationError(
                ErrorCode.OPERATION_REFUSED,
                f"{ADVISOR_TIMEOUT_VARIABLE} is {raw_timeout!r}; allowed: a positive whole "
                "number of milliseconds",
            )
        timeout = int(raw_timeout) / 1000.0
    return AdvisorSettings(model=model, provider=provider or None, timeout=timeout)


def history_facts(history: Sequence[Message], since: datetime) -> list[str]:
    """The last :data:`HISTORY_LINES` messages as facts only: seconds since ``since``, sender
    kind and, for a tool start, the tool's name. No message text is ever copied."""
    lines: list[str] = []
    for message in history[-HISTORY_LINES:]:
        offset = (message.ts - since).total_seconds()
        if message.kind is MessageKind.TOOL and _TOOL_NAME.fullmatch(message.text):
            fact = f"the agent started the tool {message.text}"
        elif message.sender == "squad":
            fact = f"a {message.kind} note of the scheduler"
        else:
            fact = f"a {message.kind} message ({len(message.text)} characters, not shown)"
        lines.append(f"- at +{offset:.0f} s: {fact}")
    return lines


def advisor_prompt(task: Task, history: Sequence[Message], quiet_seconds: float) -> str:
    """What the advisor is asked: facts about the stuck task, never its text."""
    since = task.started or (history[0].ts if history else task.created)
    facts = history_facts(history, since) or ["- (no history yet)"]
    return "\n".join(
        [
            f"Task id: {task.id}",
            f"Agent: {task.agent}",
            f"Status: {task.status}",
            f"Quiet for: {quiet_seconds:.0f} s; it was already steered once and did not move.",
            "Recent history, oldest first (times from the task's start):",
            *facts,
            "",
            "Reply with the one sentence the agent should receive.",
        ]
    )


def advice_from(text: str) -> str | None:
    """The first sentence of the advisor's reply, on one line, at most
    :data:`MAX_ADVICE_CHARS` characters; ``None`` if it said nothing."""
    flat = " ".join(text.split())
    if not flat:
        return None
    sentence = _SENTENCE_END.split(flat, maxsplit=1)[0]
    if len(sentence) > MAX_ADVICE_CHARS:
        sentence = sentence[: MAX_ADVICE_CHARS - 1].rstrip() + "…"
    return sentence

"""``orchestrator``: the main session of the offline demo (``pi-squad demo --pi``).

What it does, decided afresh from the conversation at every request (it remembers nothing):

- It records a passing ``squad_review`` of every squad whose review gate reached it (a notice in
  a user message, or the gates the main role appends to the system prompt before each prompt),
  each by its ``squadId``, at most once per squad in a conversation: the demo's verdict is a
  pass, which accepts the squad, and a refused one is not retried.
- Asked to start a squad (``start``, ``begin`` or ``launch`` in the person's latest message), it
  first asks ``squad_status`` for the project's newest squad. A squad still running, paused or
  failed is continued (``squad_modify`` resume): a session that comes back after a quit or a
  crash sees the squad it left, never starts a second one. Only when there is none, or the
  newest is done or cancelled, does it call ``squad`` with the ``scripted-args`` object.
- Anything else is answered with what it can do, and that it is a scripted offline demo.

It checks nothing but what the gate says: a real model reviews the work.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import attrs

from adapters.scripted_model.conversation import Conversation, Message, ToolCall
from adapters.scripted_model.replies import PlannedCall, PolicyState, Reply

__all__ = [
    "ARGS_MARKER",
    "DEMO_REVIEW",
    "HELP_TEXT",
    "REVIEW_GATE",
    "ExistingSquad",
    "asked_to_start",
    "existing_squad",
    "orchestrator",
    "squads_awaiting_review",
]

ARGS_MARKER = "scripted-args"
REVIEW_GATE = "awaiting orchestrator review"
DEMO_REVIEW = {
    "verdict": "pass",
    "contractChecks": ["every task's attestation verifies (the review gate lists them)"],
    "diffReview": "scripted demo: the children changed no files",
    "verificationEvidence": ["the review gate: every required attestation verifies"],
    "integrationEvidence": "scripted demo: nothing to integrate",
}
HELP_TEXT = (
    "This is pi-squad's scripted offline demo: a scripted model, not a real one, answers here, "
    "and it understands only this. It can start the demo squad (say: start the squad); if this "
    "project already has a squad still running, paused or failed, it continues that one "
    "instead of starting a second; and it records a passing review (squad_review) of every "
    "squad whose review gate reaches it. /squad status shows the squad; /squad pause, "
    "/squad resume and /squad cancel steer it."
)

_GATE = re.compile(rf"Squad (\S+) is {re.escape(REVIEW_GATE)}\.")
_START = re.compile(r"\b(?:start|begin|launch)\b", re.IGNORECASE)
_STARTED = re.compile(r'said: Squad "\S+" started')
_STATUS_SQUAD = re.compile(r"^Squad: (\S+)$", re.MULTILINE)
_STATUS_STATE = re.compile(r"^Status: (\w+)$", re.MULTILINE)
# A squad in one of these is over: asked to start, the demo starts a new one.
_FINISHED = frozenset({"done", "cancelled"})


@attrs.frozen
class ExistingSquad:
    """The project's newest squad, as ``squad_status`` described it."""

    squad_id: str
    status: str

    @property
    def unfinished(self) -> bool:
        return self.status not in _FINISHED


def orchestrator(conversation: Conversation, state: PolicyState) -> Reply:
    """The next message of the demo's main session (module docstring)."""
    pending = squads_awaiting_review(conversation)
    if pending and conversation.offers("squad_review"):
        return Reply(
            f"{_count(pending)} awaiting review ({', '.join(pending)}); recording a passing "
            "review of each.",
            tuple(PlannedCall("squad_review", {**DEMO_REVIEW, "squadId": s}) for s in pending),
        )
    turn = _turn(conversation)
    request = turn[0].text if turn and turn[0].role == "user" else ""
    last = _last_calls(turn)
    if any(call.name == "squad_review" for call in last):
        said = [_said(conversation, call) for call in last]
        if asked_to_start(request):  # the squad it would have started had reached review
            said.append("That is this project's squad, reviewed rather than started again.")
        return Reply("\n".join(said))
    if _GATE.search(request):
        return Reply("Every squad whose review gate reached me is reviewed above.")
    if not asked_to_start(request):
        return Reply(HELP_TEXT)
    return _start(conversation, turn)


def squads_awaiting_review(conversation: Conversation) -> tuple[str, ...]:
    """Each squad whose review gate reached the session (system prompt or user message) and
    that no ``squad_review`` of this conversation named yet, in the order the gates came."""
    reviewed = {_squad_of(call) for _, call in conversation.calls("squad_review")}
    gates = [conversation.system, *(m.text for m in conversation.by_role("user"))]
    found = dict.fromkeys(match.group(1) for text in gates for match in _GATE.finditer(text))
    return tuple(squad_id for squad_id in found if squad_id not in reviewed)


def asked_to_start(request: str) -> bool:
    """The person's message asks for a squad to be started."""
    return _GATE.search(request) is None and _START.search(request) is not None


def existing_squad(status_result: str) -> ExistingSquad | None:
    """The squad a ``squad_status`` result describes; ``None`` for an error (no squad)."""
    squad = _STATUS_SQUAD.search(status_result)
    state = _STATUS_STATE.search(status_result)
    if squad is None or state is None:
        return None
    return ExistingSquad(squad.group(1), state.group(1))


def _start(conversation: Conversation, turn: tuple[Message, ...]) -> Reply:
    """Asked to start: look for the project's squad, continue it or start one, then say what
    the call did."""
    made = {call.name: call for call in _calls(turn)}
    if "squad" in made:
        said = _said(conversation, made["squad"], first_line=True)
        if _STARTED.search(said) is None:  # refused: its reason is all there is to say
            return Reply(said)
        return Reply(
            f"{said}\nIt runs in the background; I record its review when its review gate "
            "reaches me."
        )
    if "squad_modify" in made:
        resumed = _squad_of(made["squad_modify"])
        return Reply(
            f"Squad {resumed} already exists in this project: I continued it rather than start "
            f"a second one.\n{_said(conversation, made['squad_modify'], first_line=True)}"
        )
    if "squad_status" not in made and conversation.offers("squad_status"):
        return Reply(
            "Checking whether this project already has a squad.", (PlannedCall("squad_status", {}),)
        )
    status = made.get("squad_status")
    result = conversation.result_for(status.id) if status is not None else None
    existing = existing_squad(result.text) if result is not None else None
    if existing is not None and existing.unfinished:
        return _continue(conversation, existing)
    return _new_squad(conversation, existing)


def _continue(conversation: Conversation, existing: ExistingSquad) -> Reply:
    if existing.status == "review":
        return Reply(
            f"Squad {existing.squad_id} is at review already: I record its review when its "
            "review gate reaches me; /squad status shows it."
        )
    if not conversation.offers("squad_modify"):
        return Reply(
            f"Squad {existing.squad_id} is {existing.status}, and squad_modify is not "
            "offered here to continue it: /squad resume does."
        )
    return Reply(
        f"Squad {existing.squad_id} is {existing.status}: continuing it.",
        (PlannedCall("squad_modify", {"action": "resume", "squadId": existing.squad_id}),),
    )


def _new_squad(conversation: Conversation, newest: ExistingSquad | None) -> Reply:
    raw = conversation.marker(ARGS_MARKER)
    if raw is None or not conversation.offers("squad"):
        return Reply(
            "I cannot start a squad here: the squad tool is not offered or no scripted-args "
            "line names its spec (pi-squad demo --pi sets both)."
        )
    before = "" if newest is None else f"Squad {newest.squad_id} is {newest.status}; "
    return Reply(f"{before}Starting the squad.", (PlannedCall("squad", _arguments(raw)),))


def _arguments(raw: str) -> dict[str, object]:
    decoded = json.loads(raw)
    return decoded if isinstance(decoded, dict) else {}


def _turn(conversation: Conversation) -> tuple[Message, ...]:
    """The messages from the latest user message on (the whole conversation without one)."""
    messages = conversation.messages
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    return messages[starts[-1] :] if starts else messages


def _calls(messages: tuple[Message, ...]) -> Iterator[ToolCall]:
    for message in messages:
        yield from message.tool_calls


def _last_calls(turn: tuple[Message, ...]) -> tuple[ToolCall, ...]:
    """The calls of the turn's latest assistant message, when their results end the turn."""
    for message in reversed(turn):
        if message.role == "assistant":
            return message.tool_calls
        if message.role != "tool":
            return ()
    return ()


def _said(conversation: Conversation, call: ToolCall, *, first_line: bool = False) -> str:
    """What ``call`` answered (only its first line: the rest is on screen in its tool row)."""
    result = conversation.result_for(call.id)
    text = result.text if result is not None else "(no result)"
    if first_line:
        text = text.split("\n", 1)[0]
    subject = _squad_of(call)
    return f"{call.name}{f' ({subject})' if subject else ''} said: {text}"


def _squad_of(call: ToolCall) -> str:
    squad_id = call.arguments.get("squadId")
    return squad_id if isinstance(squad_id, str) else ""


def _count(squads: tuple[str, ...]) -> str:
    return "1 squad is" if len(squads) == 1 else f"{len(squads)} squads are"

"""The offline demo's scripted orchestrator decides from the conversation alone: it starts a
squad only when asked, continues the project's squad after a comeback instead of starting a
second, reviews every squad whose review gate reached it, and answers anything else with what
it can do. ``FakeMainSession`` stands in for the main Pi and its squad tools."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.scripted_model.conversation import Conversation, Message, ToolCall
from adapters.scripted_model.orchestrator import (
    DEMO_REVIEW,
    HELP_TEXT,
    asked_to_start,
    existing_squad,
    orchestrator,
)
from adapters.scripted_model.replies import PolicyState, Reply

DEMO_ARGS = {"specFile": "demo.spec.json", "specSha256": "ab" * 32}
MARKERS = f"scripted-policy: orchestrator\nscripted-args: {json.dumps(DEMO_ARGS)}"
SQUAD_TOOLS = ("squad", "squad_status", "squad_modify", "squad_review", "squad_message")


def gate(squad_id: str) -> str:
    """The review gate as the main role words it (application.squads.status)."""
    return (
        f"Squad {squad_id} is awaiting orchestrator review.\n"
        "- design (architect): done · attestation valid · chunks 4/4\n"
        "Record a verdict with squad_review (pass, pass_with_issues or fail)."
    )


class FakeMainSession:
    """A main Pi session over a project's squads (id -> status, oldest first): each prompt runs
    the orchestrator until it answers without calls, its calls answered as the squad tools
    answer them; the gates of squads in review are appended to the system prompt, as the main
    role does before each prompt."""

    def __init__(self, squads: dict[str, str] | None = None, refusal: str | None = None) -> None:
        self.squads = dict(squads or {})
        self.refusal = refusal  # what the squad tool answers instead of starting one
        self.messages: list[Message] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def prompt(self, text: str) -> list[Reply]:
        self.messages.append(Message("user", text, 0))
        system = "\n\n".join(
            [MARKERS, *(gate(s) for s, status in self.squads.items() if status == "review")]
        )
        replies: list[Reply] = []
        for _ in range(10):
            conversation = Conversation(
                model="fake-model",
                stream=True,
                messages=(Message("system", system, 0), *self.messages),
                tools={name: {} for name in SQUAD_TOOLS},
            )
            reply = orchestrator(conversation, PolicyState())
            replies.append(reply)
            made = tuple(
                ToolCall(
                    f"call-{len(self.calls) + i}", c.name, c.arguments, json.dumps(c.arguments)
                )
                for i, c in enumerate(reply.tool_calls)
            )
            self.messages.append(Message("assistant", reply.text, 0, made))
            if not made:
                return replies
            for call in made:
                self.calls.append((call.name, dict(call.arguments)))
                text = self._answer(call.name, call.arguments)
                self.messages.append(Message("tool", text, 0, tool_call_id=call.id))
        raise AssertionError(f"no final answer after 10 replies: {replies}")

    def called(self, name: str) -> list[dict[str, Any]]:
        return [arguments for called, arguments in self.calls if called == name]

    def _answer(self, name: str, arguments: Any) -> str:
        squad_id = arguments.get("squadId")
        if name == "squad_status":
            if not self.squads:
                return "No squad found."
            newest = list(self.squads)[-1]
            return f"Squad: {newest}\nStatus: {self.squads[newest]}\nProgress: 1/4 done"
        if name == "squad" and self.refusal is not None:
            return self.refusal
        if name == "squad":
            created = f"sq-{len(self.squads) + 1}"
            self.squads[created] = "running"
            return f'Squad "{created}" started with 4 tasks.'
        if name == "squad_modify":
            self.squads[squad_id] = "running"
            return f"Squad '{squad_id}' resumed (1/4 tasks done; 1 task(s) resumed)."
        if name == "squad_review" and self.squads.get(squad_id) == "review":
            self.squads[squad_id] = "done"
            return f"Review of {squad_id} recorded. The squad is now accepted as done."
        return f"REVIEW_INVALID: squad {squad_id} is not awaiting orchestrator review"


def test_with_no_squad_and_asked_to_start_it_starts_exactly_one() -> None:
    session = FakeMainSession()
    replies = session.prompt("Start the squad.")
    assert session.called("squad") == [DEMO_ARGS]
    assert session.squads == {"sq-1": "running"}
    assert 'Squad "sq-1" started with 4 tasks.' in replies[-1].text


def test_a_refused_start_is_reported_as_refused_never_as_running() -> None:
    session = FakeMainSession(refusal="SPEC_HASH_MISMATCH: specSha256 is not the file's hash")
    replies = session.prompt("Start the squad.")
    assert replies[-1] == Reply("squad said: SPEC_HASH_MISMATCH: specSha256 is not the file's hash")
    assert session.squads == {}


@pytest.mark.parametrize("status", ["running", "paused", "failed"])
def test_after_a_comeback_the_existing_squad_is_continued_not_duplicated(status: str) -> None:
    """A fresh conversation (a revived or resumed session) over a project whose squad is
    still there: asked to start again, it resumes that squad by id."""
    session = FakeMainSession({"sq-1": status})
    replies = session.prompt("Start the squad.")
    assert session.called("squad") == []
    assert session.called("squad_modify") == [{"action": "resume", "squadId": "sq-1"}]
    assert session.squads == {"sq-1": "running"}
    assert "Squad sq-1 already exists in this project" in replies[-1].text


def test_asked_twice_in_one_session_it_continues_the_squad_it_started() -> None:
    session = FakeMainSession()
    session.prompt("Start the squad.")
    session.prompt("Start the squad again, please.")
    assert len(session.called("squad")) == 1
    assert list(session.squads) == ["sq-1"]


def test_asked_to_start_after_a_comeback_at_review_it_reviews_and_starts_nothing() -> None:
    session = FakeMainSession({"sq-1": "review"})
    replies = session.prompt("Start the squad.")
    assert session.called("squad_review") == [{**DEMO_REVIEW, "squadId": "sq-1"}]
    assert session.called("squad") == []
    assert "reviewed rather than started again" in replies[-1].text


@pytest.mark.parametrize("status", ["done", "cancelled"])
def test_a_finished_squad_is_not_continued_asked_to_start_it_starts_a_new_one(
    status: str,
) -> None:
    session = FakeMainSession({"sq-1": status})
    session.prompt("start the squad")
    assert session.called("squad_modify") == []
    assert session.squads == {"sq-1": status, "sq-2": "running"}


def test_two_squads_in_review_are_both_reviewed_each_once_by_id() -> None:
    session = FakeMainSession({"sq-1": "review", "sq-2": "review"})
    replies = session.prompt(gate("sq-1"))
    assert session.called("squad_review") == [
        {**DEMO_REVIEW, "squadId": "sq-1"},
        {**DEMO_REVIEW, "squadId": "sq-2"},
    ]
    assert session.squads == {"sq-1": "done", "sq-2": "done"}
    assert "squad_review (sq-2) said: Review of sq-2 recorded" in replies[-1].text
    # The second gate, delivered after both were reviewed, is not reviewed twice.
    later = session.prompt(gate("sq-2"))
    assert len(session.called("squad_review")) == 2
    assert HELP_TEXT not in later[-1].text
    assert session.called("squad") == []


def test_a_gate_arriving_later_in_the_conversation_is_reviewed_too() -> None:
    session = FakeMainSession({"sq-1": "review"})
    session.prompt(gate("sq-1"))
    session.squads["sq-2"] = "review"
    session.prompt(gate("sq-2"))
    assert [c["squadId"] for c in session.called("squad_review")] == ["sq-1", "sq-2"]


@pytest.mark.parametrize("request_text", ["hello", "What can you do?", "Review my code."])
def test_anything_else_gets_what_it_can_do_and_that_it_is_a_scripted_demo(
    request_text: str,
) -> None:
    session = FakeMainSession({"sq-1": "running"})
    (reply,) = session.prompt(request_text)
    assert reply == Reply(HELP_TEXT)
    assert "scripted offline demo" in reply.text
    assert "start the squad" in reply.text
    assert "review it when it asks" not in reply.text


def test_without_being_asked_it_starts_nothing() -> None:
    session = FakeMainSession()
    session.prompt("hello")
    assert session.calls == []


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("Start the squad.", True),
        ("please begin", True),
        ("LAUNCH it", True),
        ("The squad restarted its task.", False),
        ("hello", False),
        (gate("sq-1") + "\nstart", False),
    ],
)
def test_what_counts_as_being_asked_to_start(text: str, asked: bool) -> None:
    assert asked_to_start(text) is asked


def test_a_status_error_is_no_squad() -> None:
    assert existing_squad("No squad found.") is None
    found = existing_squad("Squad: sq-9\nStatus: paused\nProgress: 0/4 done")
    assert found is not None
    assert (found.squad_id, found.status, found.unfinished) == ("sq-9", "paused", True)

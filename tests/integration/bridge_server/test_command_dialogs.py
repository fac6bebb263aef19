"""A command's dialog over the bridge (docs/bridge.md, ``command``): an answer's ``question``
goes to the shim whole, the person's answers come back as ``command`` with ``answers`` to a role
whose commands ask questions (``CommandDialogs``), and anything else is refused."""

from __future__ import annotations

from collections.abc import Mapping

from adapters.bridge.roles import main_bridge_role
from application.ports import CommandAnswer, CommandQuestion, QuestionKind
from tests.integration.bridge_server.support import ScriptedEvents, Served

VERDICT = CommandQuestion(
    key="verdict",
    kind=QuestionKind.SELECT,
    title="Review of squad s1, verdict",
    args="review s1",
    cancelled="cancelled: nothing was recorded",
    options=("pass", "fail"),
)


class AskingEvents(ScriptedEvents):
    def command(self, name: str, args: str) -> CommandAnswer:
        self.calls.append(f"command:{name}:{args}")
        return CommandAnswer(notify="opening", question=VERDICT)

    def answered(self, name: str, args: str, answers: Mapping[str, str]) -> CommandAnswer:
        self.calls.append(f"answered:{name}:{args}:{dict(answers)}")
        return CommandAnswer(notify="recorded")


def test_a_question_reaches_the_shim_and_the_answers_come_back_to_the_role() -> None:
    events = AskingEvents()
    served = Served(main_bridge_role(events))
    try:
        asked = served.result("command", {"name": "squad", "args": "review"})
        assert asked["question"] == {
            "key": "verdict",
            "kind": "select",
            "title": "Review of squad s1, verdict",
            "args": "review s1",
            "cancelled": "cancelled: nothing was recorded",
            "options": ["pass", "fail"],
        }
        assert asked["ui"]["text"] == "opening"
        params = {"name": "squad", "args": "review s1", "answers": {"verdict": "pass"}}
        done = served.result("command", params)
        assert done["ui"]["text"] == "recorded"
        assert "question" not in done, "nothing more to ask"
        assert events.calls[-1] == "answered:squad:review s1:{'verdict': 'pass'}"
    finally:
        events.release.set()
    assert served.finish() == 0


def test_answers_to_a_role_that_asks_nothing_or_malformed_answers_are_refused(
    served: Served, events: ScriptedEvents
) -> None:
    served.request("command", {"name": "squad", "args": "review", "answers": {"verdict": "pass"}})
    refused = served.next()["error"]
    assert refused["code"] == "invalid_params"
    assert "ask no questions" in refused["message"]
    malformed: tuple[object, ...] = ([], {"verdict": 7})
    for answers in malformed:
        served.request("command", {"name": "squad", "args": "review", "answers": answers})
        assert served.next()["error"]["code"] == "invalid_params"
    assert not any(call.startswith("command:") for call in events.calls), "never served"

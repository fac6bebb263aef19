"""``complete``: Tab after a slash command asks the role for whole argument texts; a role whose
commands do not complete offers none, and a malformed request is refused."""

from __future__ import annotations

from adapters.bridge.roles import main_bridge_role
from tests.integration.bridge_server.support import ScriptedEvents, Served


class CompletingEvents(ScriptedEvents):
    def completions(self, name: str, text: str) -> tuple[str, ...]:
        self.calls.append(f"complete:{name}:{text}")
        return tuple(f"{text}{end}" for end in ("atus", "op")) if name == "squad" else ()


def test_complete_answers_the_roles_argument_texts() -> None:
    events = CompletingEvents()
    served = Served(main_bridge_role(events))
    try:
        answer = served.result("complete", {"name": "squad", "text": "st"})
        assert answer == {"items": ["status", "stop"]}
        assert events.calls[-1] == "complete:squad:st"
        assert served.result("complete", {"name": "flows", "text": ""}) == {"items": []}
    finally:
        events.release.set()
    assert served.finish() == 0


def test_a_role_whose_commands_do_not_complete_offers_nothing(served: Served) -> None:
    assert served.result("complete", {"name": "squad", "text": "st"}) == {"items": []}


def test_a_malformed_complete_request_is_refused(served: Served) -> None:
    served.request("complete", {"name": "squad", "text": 7})
    assert served.next()["error"]["code"] == "invalid_params"
    served.request("complete", {"text": "st"})
    assert served.next()["error"]["code"] == "invalid_params"

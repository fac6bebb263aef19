"""The offline demo's path (``pi-squad demo --pi``) with no Pi: the demo project and the main
session's markers as the demo writes them, the scripted model server answering over the
chat-completions wire, and the main role's real squad tools over a test world. ``DemoSession``
does what Pi does between model calls: each prompt runs until an answer without calls, the
main role's ``before_agent_start`` text appended to the system prompt, its notices delivered as
follow-up prompts. Asked to start, the session creates one squad; after a comeback, asked
again, it continues that squad; every squad that reaches review is reviewed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.scripted_model import MODEL_ID, ScriptedModelServer
from application.main_role import MainRole
from application.ports import SessionEvent, SessionNotification, ToolFailure
from domain.squad.model import ReviewStatus, SquadStatus
from entrypoints.demo import DEMO_SPEC, main_session_markers, prepare_demo
from tests.integration.main_role.support import RecordingDrive, main_role_over
from tests.integration.ops_support import CHAIN_SPEC, LINE_SPEC, run_to_review
from tests.integration.scripted_model.completions_client import complete
from tests.runtime_world import RuntimeWorld


class DemoSession:
    """One main Pi session of the demo, over ``role``, answered by ``model``."""

    def __init__(self, role: MainRole, model: ScriptedModelServer, markers: str) -> None:
        self.role = role
        self.model = model
        self.markers = markers
        self.messages: list[dict[str, Any]] = []
        self.emitted: list[SessionNotification] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.tools = [
            {"type": "function", "function": {"name": t.name, "parameters": t.parameters}}
            for t in role.registrations().tools
        ]
        role.attach(self.emitted.append)

    def prompt(self, text: str) -> str:
        """The answer that ends the turn ``text`` starts."""
        self.messages.append({"role": "user", "content": text})
        system = "\n\n".join(filter(None, [self.markers, self.role.before_agent_start()]))
        for _ in range(10):
            body = {
                "model": MODEL_ID,
                "stream": True,
                "stream_options": {"include_usage": True},
                "messages": [{"role": "system", "content": system}, *self.messages],
                "tools": self.tools,
            }
            reply = complete(self.model, body)
            calls = reply["tool_calls"]
            self.messages.append(
                {
                    "role": "assistant",
                    "content": reply["text"] or None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {
                                "name": c["name"],
                                "arguments": json.dumps(c["arguments"]),
                            },
                        }
                        for c in calls
                    ],
                }
            )
            if not calls:
                return str(reply["text"])
            for call in calls:
                self.calls.append((call["name"], call["arguments"]))
                result = self._execute(call["id"], call["name"], call["arguments"])
                self.messages.append(
                    {"role": "tool", "content": result, "tool_call_id": call["id"]}
                )
        raise AssertionError(f"no answer without calls after 10 model calls: {self.messages}")

    def deliver_notices(self) -> list[str]:
        """Each message the role sent into the session, as the prompt Pi makes of it."""
        sent = [n for n in self.emitted if n.event == SessionEvent.SEND_MESSAGE]
        self.emitted.clear()
        return [self.prompt(str(n.data["message"]["content"])) for n in sent]

    def called(self, name: str) -> list[dict[str, Any]]:
        return [arguments for called, arguments in self.calls if called == name]

    def _execute(self, call_id: str, name: str, arguments: dict[str, Any]) -> str:
        try:
            return "\n".join(self.role.execute_tool(call_id, name, arguments).texts)
        except ToolFailure as failure:
            return failure.message


def squads_of(world: RuntimeWorld) -> list[str]:
    return [s.id for s in world.store.list_squads() if s.cwd == world.cwd]


def test_the_demo_starts_one_squad_continues_it_after_a_comeback_and_reviews_every_squad(
    tmp_path: Path,
) -> None:
    project, root, digest = prepare_demo(tmp_path / "demo")
    world = RuntimeWorld(base=tmp_path / "demo", spec=CHAIN_SPEC)
    assert (world.cwd, world.root) == (str(project), str(root))
    markers = main_session_markers(digest)
    drive = RecordingDrive()
    with ScriptedModelServer("diligent") as model:
        with main_role_over(world, drive) as role:
            session = DemoSession(role, model, markers)
            answer = session.prompt("What can you do?")
            assert "scripted offline demo" in answer
            assert squads_of(world) == [], "not asked to start: nothing started"
            answer = session.prompt("Start the squad.")
            (demo_squad,) = squads_of(world)
            assert session.called("squad") == [{"specFile": DEMO_SPEC, "specSha256": digest}]
            assert f'Squad "{demo_squad}" started' in answer

        # The comeback: a new session, its conversation empty, the squad left behind.
        with main_role_over(world, drive) as role:
            session = DemoSession(role, model, markers)
            answer = session.prompt("Start the squad.")
            assert squads_of(world) == [demo_squad], "the comeback started no second squad"
            assert session.called("squad") == []
            assert session.called("squad_modify") == [{"action": "resume", "squadId": demo_squad}]
            assert f"Squad {demo_squad} already exists" in answer
            assert drive.driven == [demo_squad, demo_squad], "driven again by this session"

        # Two more squads of the project reach review headless (from a terminal).
        world.publish()
        run_to_review(world)
        sibling = world.sibling(LINE_SPEC)
        sibling.publish()
        run_to_review(sibling, order=("contract", "impl", "check", "release"))
        in_review = [world.squad_id, sibling.squad_id]

        with main_role_over(world, drive) as role:
            session = DemoSession(role, model, markers)
            answers = session.deliver_notices()
            assert len(answers) == 2, "both review gates reached the session"
            reviewed = [c["squadId"] for c in session.called("squad_review")]
            assert reviewed == in_review, "each squad in review reviewed once, by its id"
            assert "accepted as done" in answers[0]
            assert session.called("squad") == []

    for squad_id in in_review:
        squad = world.store.snapshot(squad_id).squad
        assert squad.status is SquadStatus.DONE
        assert squad.review is not None
        assert squad.review.status is ReviewStatus.PASSED
    assert squads_of(world) == [demo_squad, *in_review]

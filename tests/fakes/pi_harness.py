"""A fake of Pi 0.80.10's extension host for one child process, driving ``PiEvents``.

It reproduces what the contract depends on (reference/pi-runtime.md):

* arguments are validated against the registered schema *before* ``tool_call``; an invalid
  call becomes a ``Validation failed`` error result and ``tool_call`` never fires for it;
* for one assistant message, every call is preflighted through ``tool_call`` in source order,
  sequentially; only then do the allowed calls execute, concurrently;
* one tool-result ``message_end`` per call is then emitted, in source order, blocked and
  failed calls included (as error results);
* after those results Pi calls the model again, and before every model call comes the
  ``context`` event: ``assistant_message`` ends with it when the message called tools. The
  shim only logs a ``context`` failure; here it is raised, so a test sees it. A crash ends Pi
  before that event: what was delivered since the last one is never committed;
* an unregistered tool is "not found" and never reaches ``tool_call``.

``serialise_executions`` runs the allowed calls one at a time (still on the pool's threads):
for a child over pyfakefs, which is not thread-safe and whose ``os.open`` of an existing file
chmods it and so moves its ctime. Two sibling reads of the canonical spec that overlap there
see each other's open as a change of the file (``ctime_ns changed while it was read``), a
failure Linux never produces for a read-only open; its descriptor table is unguarded too. On
a real file system the calls stay concurrent, as Pi runs them.

A test can crash the child between any two of those steps (the role object is dropped with
whatever it held in memory), tamper with a result before its ``message_end``, and restart the
child on the same task (a new role over the same files).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import attrs

from application.ports import PiEvents, Registrations, ToolFailure

BUILTIN_TOOLS = ("read", "bash", "edit", "write", "grep", "find", "ls")


class ChildCrashed(Exception):
    """The emulated Pi process died at the requested point."""


@attrs.frozen
class Call:
    id: str
    name: str
    args: Mapping[str, Any]


def read(index: int, call_id: str | None = None) -> Call:
    return Call(id=call_id or f"call-read-{index}", name="squad_spec_read", args={"index": index})


def tool(name: str, call_id: str | None = None, **args: Any) -> Call:
    return Call(id=call_id or f"call-{name}", name=name, args=args)


CrashPoint = Literal["after_preflight", "after_execution"] | int
Tamper = Callable[[dict[str, Any]], dict[str, Any]]


@attrs.define
class FakePiChild:
    """One child Pi process. ``make_role`` builds the Python side as the shim would."""

    make_role: Callable[[], PiEvents]
    role: PiEvents = attrs.field(init=False)
    registrations: Registrations = attrs.field(init=False)
    executed: list[Call] = attrs.field(factory=list)
    preflighted: list[str] = attrs.field(factory=list)
    extra_tools: set[str] = attrs.field(factory=set)
    restarts: int = 0
    serialise_executions: bool = attrs.field(default=False, kw_only=True)
    _executed_guard: threading.Lock = attrs.field(factory=threading.Lock)
    _execution_turn: threading.Lock = attrs.field(factory=threading.Lock)

    def __attrs_post_init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self.role = self.make_role()
        self.registrations = self.role.registrations()
        self.role.session_start()

    def restart(self) -> None:
        """A new process on the same task: nothing in memory survives."""
        self.restarts += 1
        self._start()

    def register_tool_later(self, name: str) -> None:
        """Another extension registers a tool after startup."""
        self.extra_tools.add(name)

    def system_prompt(self, base: str = "BASE") -> str:
        text = self.role.before_agent_start() if self.registrations.bootstrap else None
        return base if text is None else f"{base}\n\n{text}"

    def _known(self, name: str) -> bool:
        registered = {spec.name for spec in self.registrations.tools}
        return name in registered or name in BUILTIN_TOOLS or name in self.extra_tools

    def _schema_problem(self, call: Call) -> str | None:
        for spec in self.registrations.tools:
            if spec.name == call.name:
                allowed = set(spec.parameters.get("properties", {}))
                required = set(spec.parameters.get("required", []))
                if set(call.args) - allowed or required - set(call.args):
                    return "Validation failed: arguments do not match the schema"
                index = call.args.get("index")
                if call.name == "squad_spec_read" and (type(index) is not int or index < 0):
                    return "Validation failed: index must be an integer >= 0"
        return None

    def assistant_message(
        self,
        calls: Sequence[Call],
        *,
        tamper: Mapping[str, Tamper] | None = None,
        crash_at: CrashPoint | None = None,
        raw_arguments: Mapping[str, object] | None = None,
        next_model_call: bool = True,
    ) -> list[dict[str, Any]]:
        """Run one assistant message's tool calls; return the tool-result messages.
        ``next_model_call=False`` stops before Pi's next model call and its ``context`` event.

        As Pi does: the finalised assistant message (its tool calls with the *raw* arguments
        the model sent, ``raw_arguments`` by call id where they differ from the coerced
        ``call.args``) reaches ``message_end`` before any call is preflighted."""
        self._assistant_message_end(calls, raw_arguments)
        outcomes: dict[str, dict[str, Any]] = {}
        allowed: list[Call] = []
        for call in calls:
            refusal = self._preflight(call)
            if refusal is None:
                allowed.append(call)
            else:
                outcomes[call.id] = refusal
        if crash_at == "after_preflight":
            raise ChildCrashed("after preflight")
        with ThreadPoolExecutor(max_workers=max(1, len(allowed))) as pool:
            for call, outcome in zip(allowed, pool.map(self._execute, allowed), strict=True):
                outcomes[call.id] = outcome
        if crash_at == "after_execution":
            raise ChildCrashed("after execution")
        messages: list[dict[str, Any]] = []
        for position, call in enumerate(calls):
            if crash_at == position:
                raise ChildCrashed(f"before message_end {position}")
            message = outcomes[call.id]
            if tamper and call.id in tamper:
                message = tamper[call.id](message)
            if self.registrations.message_end:
                self.role.message_end(message)
            messages.append(message)
        if calls and next_model_call:
            self.context()  # before Pi's next model call
        return messages

    def context(self) -> None:
        """Pi's ``context`` event (before a model call), when the role registered it."""
        if self.registrations.context:
            self.role.context()

    def assistant_message_in_turn(self, calls: Sequence[Call]) -> list[dict[str, Any]]:
        """One assistant message whose calls Pi runs one after another (its sequential tool
        execution, chosen when a tool of the message asks for it): each call is preflighted,
        executed and its result's ``message_end`` emitted before the next call's preflight.
        Ends with the next model call's ``context`` event, like ``assistant_message``."""
        self._assistant_message_end(calls, None)
        messages: list[dict[str, Any]] = []
        for call in calls:
            refusal = self._preflight(call)
            message = refusal if refusal is not None else self._execute(call)
            if self.registrations.message_end:
                self.role.message_end(message)
            messages.append(message)
        if calls:
            self.context()
        return messages

    def _assistant_message_end(
        self, calls: Sequence[Call], raw_arguments: Mapping[str, object] | None
    ) -> None:
        if not (self.registrations.message_end and calls):
            return
        raw = raw_arguments or {}
        self.role.message_end(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": call.id,
                        "name": call.name,
                        "arguments": raw.get(call.id, dict(call.args)),
                    }
                    for call in calls
                ],
            }
        )

    def _preflight(self, call: Call) -> dict[str, Any] | None:
        """The error result Pi gives a call it does not run, or ``None`` when it may run."""
        if not self._known(call.name):
            return self._error(call, f"Tool {call.name} not found")
        problem = self._schema_problem(call)
        if problem is not None:
            return self._error(call, problem)
        self.preflighted.append(call.id)
        try:
            decision = self.role.tool_call(call.id, call.name, dict(call.args))
            blocked, reason = decision.block, decision.reason
        except Exception as exc:  # Pi blocks a call whose handler throws
            blocked, reason = True, str(exc)
        return self._error(call, reason or "blocked") if blocked else None

    def _execute(self, call: Call) -> dict[str, Any]:
        if not self.serialise_executions:
            return self._run(call)
        with self._execution_turn:
            return self._run(call)

    def _run(self, call: Call) -> dict[str, Any]:
        registered = {spec.name for spec in self.registrations.tools}
        if call.name in registered:
            try:
                result = self.role.execute_tool(call.id, call.name, dict(call.args))
            except ToolFailure as failure:
                return self._error(call, failure.message)
            return {
                "role": "toolResult",
                "toolCallId": call.id,
                "toolName": call.name,
                "content": [{"type": "text", "text": text} for text in result.texts],
                "details": dict(result.details),
                "isError": False,
                "timestamp": 0,
            }
        with self._executed_guard:
            self.executed.append(call)
        return {
            "role": "toolResult",
            "toolCallId": call.id,
            "toolName": call.name,
            "content": [{"type": "text", "text": f"{call.name} ran"}],
            "details": {},
            "isError": False,
            "timestamp": 0,
        }

    @staticmethod
    def _error(call: Call, text: str) -> dict[str, Any]:
        return {
            "role": "toolResult",
            "toolCallId": call.id,
            "toolName": call.name,
            "content": [{"type": "text", "text": text}],
            "details": {},
            "isError": True,
            "timestamp": 0,
        }

    def executed_names(self) -> list[str]:
        return [call.name for call in self.executed]


def result_texts(message: Mapping[str, Any]) -> list[str]:
    return [block["text"] for block in message["content"]]

"""What flow tests share: an agent directory over definitions, and fake children that answer
as a test scripts them (synchronously, inside ``spawn``, or later from a timer thread)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

import attrs

from adapters.catalogue.preset_files import BUNDLED_PRESETS_DIR, load_preset_directory
from domain.agents import AgentCatalog, AgentDefinition, AgentSource, LoadedAgent
from domain.flows.mode_parts import CheckOutcome
from domain.flows.models import AvailableModels
from domain.flows.presets import PresetCatalog, parse_preset
from domain.flows.roster_config import ModelFiles
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime

READ_ONLY = ("read", "grep", "find", "ls")


def agent(name: str, **fields: object) -> AgentDefinition:
    values: dict[str, object] = {
        "role": name.title(),
        "description": f"the {name}",
        "prompt": f"You are the {name}.",
        **fields,
    }
    return AgentDefinition(name=name, **values)  # type: ignore[arg-type]


@attrs.define
class FakeAgentDirectory:
    """``catalog(cwd)`` over fixed definitions: ``bundled`` and ``user`` and ``project`` ones."""

    # Read-only by default, so fan-outs pass the shared-write guard; a test adds writers.
    bundled: tuple[AgentDefinition, ...] = (
        agent("recon", tools=READ_ONLY, tier="fast"),
        agent("researcher", tools=READ_ONLY),
        agent("reviewer", tools=READ_ONLY),
    )
    user: tuple[AgentDefinition, ...] = ()
    project: tuple[AgentDefinition, ...] = ()
    asked: list[str] = attrs.field(factory=list)

    def catalog(self, cwd: str) -> AgentCatalog:
        self.asked.append(cwd)

        def loaded(defs: tuple[AgentDefinition, ...], source: AgentSource) -> list[LoadedAgent]:
            return [LoadedAgent(d, source, f"/{source.value}/{d.name}.json") for d in defs]

        return AgentCatalog.merge(
            loaded(self.bundled, AgentSource.BUNDLED),
            loaded(self.user, AgentSource.USER),
            loaded(self.project, AgentSource.PROJECT),
        )


@attrs.define
class FakePresetDirectory:
    """The bundled presets (read from the package) plus presets given as file texts."""

    user: tuple[str, ...] = ()
    project: tuple[str, ...] = ()

    def catalog(self, cwd: str) -> PresetCatalog:
        bundled, problems = load_preset_directory(BUNDLED_PRESETS_DIR, AgentSource.BUNDLED)
        loaded = [
            *bundled,
            *(parse_preset(t, AgentSource.USER, f"/user/{i}.md") for i, t in enumerate(self.user)),
            *(
                parse_preset(t, AgentSource.PROJECT, f"/project/{i}.md")
                for i, t in enumerate(self.project)
            ),
        ]
        return PresetCatalog(tuple(loaded), tuple(problems))


@attrs.define
class FakeModelSource:
    """``ModelSource`` over given file texts and a given registry answer (``None``: no
    registry), counting how often the registry was asked."""

    files: ModelFiles = attrs.field(factory=ModelFiles)
    available: AvailableModels | None = None
    queries: int = 0

    def model_files(self) -> ModelFiles:
        return self.files

    def available_models(self) -> AvailableModels | None:
        self.queries += 1
        return self.available


Script = Callable[[FakeChild], None]


def answer(text: str = "done", *, tokens: int = 10, cost: float = 0.001) -> Script:
    """A child that says ``text`` and settles, inside ``spawn``."""

    def script(child: FakeChild) -> None:
        child.say(text, tokens=tokens, cost=cost)
        child.settle()

    return script


def echo_prompt(child: FakeChild) -> None:
    """A child whose answer is its agent's name and the prompt it received."""
    child.say(f"[{child.request.task_id}] saw: {child.request.first_prompt}")
    child.settle()


@attrs.define
class ScriptedRuntime:
    """A ``FakeChildRuntime`` whose children follow ``scripts[task_id]`` (``default``
    otherwise); ``delay`` runs each script on a timer thread, so children overlap."""

    runtime: FakeChildRuntime = attrs.field(factory=FakeChildRuntime)
    scripts: dict[str, Script] = attrs.field(factory=dict)
    default: Script = echo_prompt
    delay: float | None = None
    max_alive: int = 0
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def __attrs_post_init__(self) -> None:
        self.runtime.on_spawn = self._spawned

    def _spawned(self, child: FakeChild) -> None:
        with self._lock:
            alive = sum(1 for c in self.runtime.spawned if c.alive())
            self.max_alive = max(self.max_alive, alive)
        script = self.scripts.get(child.task_id, self.default)
        if self.delay is None:
            script(child)
        else:
            threading.Timer(self.delay, script, args=(child,)).start()

    def order(self) -> list[str]:
        return [child.task_id for child in self.runtime.spawned]


_FENCE = re.compile(
    r"<<<UNTRUSTED DATA (\w{16}): (output of [^.]*)\. [^\n]*>>>\n"
    r"(.*?)\n<<<END UNTRUSTED DATA \1>>>",
    re.DOTALL,
)


def handed(prompt: str) -> dict[str, Any]:
    """The handoff envelopes a recipient's prompt carries, parsed, by the fence's label
    (``output of step-1 (researcher)``): what crossed must be JSON, so this parses it."""
    return {label: json.loads(body) for _id, label, body in _FENCE.findall(prompt)}


@attrs.define
class FakeCheckRun:
    """``CheckRun`` answering from ``outcomes`` in turn (the last one repeats; a passing empty
    check when none is given), recording each ``(command, cwd, timeout_ms)`` it was asked."""

    outcomes: list[CheckOutcome] = attrs.field(factory=list)
    calls: list[tuple[str, str, int]] = attrs.field(factory=list)

    def __call__(self, command: str, cwd: str, timeout_ms: int) -> CheckOutcome:
        self.calls.append((command, cwd, timeout_ms))
        if not self.outcomes:
            return CheckOutcome(0)
        index = min(len(self.calls), len(self.outcomes)) - 1
        return self.outcomes[index]

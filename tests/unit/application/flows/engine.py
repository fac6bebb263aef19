"""The flow engine on fakes: a ``FlowRunner`` over the scripted child runtime, fake agent and
preset directories and the host file system under a test's own directory; ``TracedEngine``
adds a fake trace exporter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from application.flows.flow_report import FlowReport
from application.flows.run_flow import FlowContext, FlowRunner
from application.flows.trace_setup import TraceDefaults
from application.ports import IsolationSupport
from application.squads.scheduler import NO_ISOLATION
from domain.flows.errors import FlowError
from domain.flows.flow_settings import FlowSettings
from entrypoints.concerns.settings import Settings
from tests.fakes.child_runtime import FakeChild
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.flows import FakeAgentDirectory, FakePresetDirectory, ScriptedRuntime
from tests.fakes.tracing import FakeTracer, FakeTraceSinks
from tests.host_fs import host_file_system

WHY = "independent verification"


def flow_settings(environ: dict[str, str]) -> FlowSettings:
    """pi-flows' settings as the process's ``Settings`` reads them from ``environ``."""
    settings = Settings()
    settings.environ.override(providers.Object(environ))
    return settings.flow_settings()


# The smallest valid call: one researcher child.
SINGLE = {"agent": "researcher", "task": "t", "why": WHY}


class Engine:
    def __init__(
        self,
        base: Path,
        agents: FakeAgentDirectory | None = None,
        presets: FakePresetDirectory | None = None,
        isolation: IsolationSupport = NO_ISOLATION,
        runner_class: type[FlowRunner] = FlowRunner,
        **runner: Any,
    ) -> None:
        self.base = base
        self.cwd = base / "project"
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.root = base / "root"
        self.scripted = ScriptedRuntime()
        self.agents = agents or FakeAgentDirectory()
        self.presets = presets or FakePresetDirectory()
        self.clock = FakeClock()
        self.runner = runner_class(
            runtime=self.scripted.runtime,
            agents=self.agents,
            presets=self.presets,
            fs=host_file_system(),
            clock=self.clock,
            ids=runner.pop("ids", SequentialIds()),
            squad_root=str(self.root),
            isolation=isolation,
            **runner,
        )

    def run(self, document: object, **context: Any) -> FlowReport:
        return self.runner.run(document, FlowContext(cwd=str(self.cwd), **context))

    def refuse(self, document: object) -> FlowError:
        with pytest.raises(FlowError) as caught:
            self.run(document)
        # The rule under test: a refused call spawns nothing and writes nothing.
        assert self.scripted.runtime.spawned == []
        assert not (self.root / ".flows").exists()
        return caught.value

    @property
    def prompts(self) -> dict[str, str]:
        return {c.task_id: c.request.first_prompt for c in self.scripted.runtime.spawned}


class TracedEngine(Engine):
    """An engine whose flow calls write their spans to ``sinks`` (a fresh fake by default)."""

    def __init__(
        self,
        base: Path,
        sinks: FakeTraceSinks | None = None,
        defaults: TraceDefaults | None = None,
    ) -> None:
        self.sinks = sinks if sinks is not None else FakeTraceSinks()
        super().__init__(
            base,
            trace_sinks=self.sinks,
            trace_defaults=defaults if defaults is not None else TraceDefaults(),
        )

    def takes(self, key: str, seconds: float, text: str = "done") -> None:
        """Child ``key`` runs ``seconds`` on the fake clock, then answers ``text``."""

        def script(child: FakeChild) -> None:
            self.clock.advance(seconds)
            child.say(text, tokens=5, cost=0.01)
            child.settle()

        self.scripted.scripts[key] = script

    @property
    def tracer(self) -> FakeTracer:
        return self.sinks.last

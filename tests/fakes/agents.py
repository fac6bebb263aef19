"""A typed in-memory agent lookup: which names resolve, and why the others do not."""

from __future__ import annotations

import attrs


@attrs.define
class FakeAgentLookup:
    enabled: set[str] = attrs.field(
        factory=lambda: {"architect", "backend", "docs", "qa", "fullstack", "reviewer"}
    )
    disabled: set[str] = attrs.field(factory=set)
    asked: list[str] = attrs.field(factory=list)

    def unavailable_reason(self, name: str) -> str | None:
        self.asked.append(name)
        if name in self.disabled:
            return f"agent '{name}' is disabled"
        if name in self.enabled:
            return None
        return f"agent '{name}' has no definition"

"""A scripted ``code-review`` reviewer, for the fake child runtime and for the scripted model:
it reads the pinned range from its prompt, as a real overwatch child would, and returns a typed
envelope for its axis (changed by ``override``: a wrong id, a path left out, findings)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.fakes.child_runtime import FakeChild
from tests.unit.application.flows.envelopes import envelope, fenced

_CONTRACT = re.compile(r'Set contractId to exactly "([^"]+)"')
_PIN = re.compile(r"^- (base|head): ([0-9a-f]{40,64})", re.MULTILINE)
_PATH = re.compile(r"^  [A-Z]\t(.+)$", re.MULTILINE)


def pinned(prompt: str) -> dict[str, Any]:
    """What the harness pinned into ``prompt``: ``base``, ``head`` and the manifest's paths."""
    return {**dict(_PIN.findall(prompt)), "paths": _PATH.findall(prompt)}


def finding(path: str, severity: str = "high") -> dict[str, Any]:
    return {
        "id": f"F-{path}",
        "path": path,
        "startLine": 1,
        "endLine": 2,
        "severity": severity,
        "category": "correctness",
        "claim": f"{path} drops an error",
        "evidence": f"{path}:1",
        "suggestion": "raise it",
    }


Override = Callable[[str, dict[str, Any]], dict[str, Any]]


def unchanged(axis: str, data: dict[str, Any]) -> dict[str, Any]:
    return data


def review_answer(prompt: str, override: Override = unchanged) -> str:
    """A reviewer's final message for ``prompt``: every pinned path reviewed, the pinned ids
    attested, for the axis the prompt names; ``override(axis, data)`` gives the ``data`` it
    sends instead."""
    axis = "standards" if "Standards review" in prompt else "spec"
    pins = pinned(prompt)
    data = {
        "axis": axis,
        "base": pins.get("base", "0" * 40),
        "head": pins.get("head", "0" * 40),
        "coverage": [
            {"path": p, "status": "reviewed", "evidence": f"read {p}"} for p in pins["paths"]
        ],
        "findings": [],
    }
    contract = _CONTRACT.search(prompt)
    typed = envelope(
        contractId=contract.group(1) if contract else "",
        summary=f"{axis} review done",
        evidence=[],
        data=override(axis, data),
    )
    return fenced(typed)


def reviewer(override: Override = unchanged) -> Callable[[FakeChild], None]:
    """A fake child that answers as :func:`review_answer` says."""

    def script(child: FakeChild) -> None:
        child.say(review_answer(child.request.first_prompt, override))
        child.settle()

    return script

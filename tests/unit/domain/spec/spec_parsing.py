"""How the ``parse_spec`` tests parse a spec and read its rejection; no message may quote the
spec's content (``SECRET`` marks it)."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import ErrorCode, SpecError
from domain.spec.parse import parse_spec
from tests.builders import encode, sha
from tests.fakes.agents import FakeAgentLookup

SECRET = "TOP-SECRET-MARKER-7f3a"


def parse(data: bytes, digest: str | None = None, agents: FakeAgentLookup | None = None) -> Any:
    return parse_spec(data, sha(data) if digest is None else digest, agents or FakeAgentLookup())


def rejection(data: bytes, digest: str | None = None, **kw: Any) -> SpecError:
    with pytest.raises(SpecError) as caught:
        parse(data, digest, **kw)
    assert SECRET not in str(caught.value), "messages never quote spec content"
    return caught.value


def plan_rejection(document: dict[str, Any], agents: FakeAgentLookup | None = None) -> str:
    error = rejection(encode(document), agents=agents)
    assert error.code is ErrorCode.PLAN_INVALID
    return error.message

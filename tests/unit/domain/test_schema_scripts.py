"""The schema scripts are the only source of the committed schema documents: each script's
output equals the files in ``domain/spec/schemas`` byte for byte, so a field changed by hand in
one file (or in the domain values a script imports) is caught."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from domain.flows.call import SCHEMAS
from domain.names import schema_text

REPO = Path(__file__).resolve().parents[3]


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", ["flow_schemas", "delegate_schemas"])
def test_the_committed_schemas_are_the_scripts_output(script: str) -> None:
    written = _script(script).all_schemas()
    assert written
    for name, body in written.items():
        committed = (REPO / "domain/spec/schemas" / f"{name}.schema.json").read_text("utf-8")
        assert committed == schema_text(body), name


def test_every_flow_mode_has_a_generated_schema() -> None:
    assert set(SCHEMAS.values()) <= set(_script("flow_schemas").schemas())

"""Delegation contracts over a real Pi child and the scripted model (``envelope`` policy: the
child returns a ``pi-flows.return-envelope.v1`` echoing the identity its prompt names, with the
``data`` the task's ``scripted-envelope-data`` marker gives). Skipped without the runtime."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.pi_runtime import PiRuntime
from domain.flows.contracts import Contract
from tests.e2e.flow_runs import WHY, run_flow
from tests.unit.domain.flows.test_contracts import contract

pytestmark = pytest.mark.realpi


def contracted_single(data: object) -> dict[str, Any]:
    task = f"scripted-policy: envelope\nscripted-envelope-data: {json.dumps(data)}\nFind it."
    return {"agent": "researcher", "task": task, "contract": contract(), "why": WHY}


def test_a_contracted_single_whose_envelope_passes(tmp_path: Path, runtime: PiRuntime) -> None:
    status, document = run_flow(tmp_path, contracted_single({"answer": "s-42"}))
    assert status == 0, document
    (result,) = document["results"]
    identity = Contract.of(contract()).contract_id
    assert result["status"] == "completed"
    assert result["contractId"] == identity
    assert result["envelope"]["contractId"] == identity
    assert result["envelope"]["data"] == {"answer": "s-42"}
    assert result["envelope"]["usage"]["turns"] >= 1
    assert result["handoff"]["compatibility"] == "typed"


def test_a_contracted_single_whose_data_violates_the_schema(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    status, document = run_flow(tmp_path, contracted_single({"answer": 42}))
    assert status == 1, document
    (result,) = document["results"]
    assert result["status"] == "failed"
    assert result["error"]["code"] == "RETURN_ENVELOPE_INVALID"
    assert "data does not satisfy contract.returnSchema" in result["error"]["message"]
    assert "envelope" not in result
    assert document["summary"] == "Flow single: failed (RETURN_ENVELOPE_INVALID)."

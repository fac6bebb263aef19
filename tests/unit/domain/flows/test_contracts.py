"""Delegation contracts: the canonical serialisation and the ``sha256:`` identity (stable across
key order and processes, changed by any field; the same bytes as pi-flows' JavaScript), the
closed contract schema (``INVALID_DELEGATION_CONTRACT`` at the role's path), and the return
requirements appended to a delegated prompt."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.errors import ErrorCode
from domain.flows.call import parse_call
from domain.flows.canonical import canonical_bytes, canonical_sha256, canonical_text, js_number
from domain.flows.contracts import (
    EVIDENCE_REQUIREMENT,
    Contract,
    contracted_task,
    return_requirements,
)
from domain.flows.errors import FlowError

REPO = Path(__file__).resolve().parents[4]
WHY = "independent verification"


def contract(**changes: Any) -> dict[str, Any]:
    """The seed's example contract."""
    found: dict[str, Any] = {
        "objective": "Find the configured sample identifier.",
        "constraints": ["Read only."],
        "nonGoals": ["Do not edit configuration."],
        "dependencies": ["settings.txt"],
        "authority": {
            "may": ["Read repository files."],
            "mustNot": ["Write repository files."],
            "requiresApproval": [],
        },
        "sideEffectClass": "read-only",
        "budget": {"timeoutMs": 30000, "maxGeneratedTokens": 2000},
        "acceptanceChecks": ["Return the exact value and source path."],
        "returnSchema": {
            "type": "object",
            "required": ["answer"],
            "properties": {"answer": {"type": "string"}},
            "additionalProperties": False,
        },
        "owner": "parent",
    }
    found.update(changes)
    return found


FIELDS = list(contract())

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
# Index-like keys are where JavaScript's object order differs from a plain sort.
KEYS = st.text(max_size=6) | st.integers(min_value=0, max_value=2**33).map(str) | st.just("01")
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)


def shuffled(value: Any, seed: int) -> Any:
    """``value`` with every object's keys in another insertion order."""
    if isinstance(value, dict):
        keys = list(value)
        keys = keys[seed % len(keys) :] + keys[: seed % len(keys)] if keys else keys
        return {key: shuffled(value[key], seed + 1) for key in reversed(keys)}
    if isinstance(value, list):
        return [shuffled(item, seed + 1) for item in value]
    return value


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (2000.0, "2000"),
        (2000, "2000"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (123.456, "123.456"),
        (2**53 + 1, "9007199254740992"),
        (10**400, "null"),
        (-1.25e300, "-1.25e+300"),
    ],
)
def test_numbers_are_written_as_javascript_writes_them(number: float, text: str) -> None:
    assert js_number(number) == text


def test_keys_sort_by_utf16_code_units_and_strings_escape_as_json_stringify() -> None:
    # U+FF61 sorts after U+1F600 in UTF-16 (0xD83D < 0xFF61), before it by code point.
    value = {"\uff61": 1, "\U0001f600": 2, "b": '\x00\x1f\u2028"\\\n', "a": [True, None]}
    assert canonical_text(value) == (
        '{"a":[true,null],"b":"\\u0000\\u001f\u2028\\"\\\\\\n","\U0001f600":2,"\uff61":1}'
    )
    assert canonical_bytes(value) == canonical_text(value).encode("utf-8")
    # Array-index keys come first, numerically, as a JavaScript object lists them.
    assert canonical_text({"b": 0, "10": 1, "": 2, "2": 3, "01": 4, "4294967295": 5}) == (
        '{"2":3,"10":1,"":2,"01":4,"4294967295":5,"b":0}'
    )


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.integers(min_value=0, max_value=7))
def test_the_canonical_text_ignores_key_order_and_reads_back_as_the_same_data(
    value: Any, seed: int
) -> None:
    assert canonical_text(shuffled(value, seed)) == canonical_text(value)
    assert canonical_sha256(shuffled(value, seed)) == canonical_sha256(value)

    # Round trip: the text is JSON denoting the same data (a double for every number).
    def as_doubles(v: Any) -> Any:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, int | float):
            try:
                return float(v)
            except OverflowError:
                return None
        if isinstance(v, list):
            return [as_doubles(i) for i in v]
        return {k: as_doubles(i) for k, i in v.items()}

    assert as_doubles(json.loads(canonical_text(value))) == as_doubles(value)


@given(st.sampled_from(FIELDS), st.integers(min_value=0, max_value=3))
def test_any_field_change_gives_a_new_identity(field: str, how: int) -> None:
    base = Contract.of(contract())
    changed = copy.deepcopy(contract())
    value = changed[field]
    if isinstance(value, str):
        changed[field] = value + (" " if how % 2 else ".")
    elif isinstance(value, list):
        changed[field] = [*value, f"extra {how}"]
    elif field == "authority":
        changed[field]["requiresApproval"] = [f"approval {how}"]
    elif field == "budget":
        changed[field]["timeoutMs"] = 30001 + how
    else:  # returnSchema
        changed[field]["properties"]["answer"]["minLength"] = how
    assert Contract.of(changed).contract_id != base.contract_id
    # ...and key order alone never does.
    assert Contract.of(shuffled(contract(), how)).contract_id == base.contract_id


def test_the_identity_is_the_same_in_another_process() -> None:
    document = contract()
    code = (
        "import json, sys\n"
        "from domain.flows.contracts import Contract\n"
        "print(Contract.of(json.load(sys.stdin)).contract_id)\n"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(shuffled(document, 3)),
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    here = Contract.of(document).contract_id
    assert other.stdout.strip() == here
    assert here.startswith("sha256:")
    assert len(here) == 71


NODE = os.environ.get("PI_SQUAD_NODE") or shutil.which("node")
CANON_JS = """
const canon = (v) => Array.isArray(v) ? v.map(canon)
  : (v && typeof v === "object")
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]))
  : v;
const input = require("fs").readFileSync(0, "utf8");
for (const line of input.split("\\n").filter(Boolean)) {
  process.stdout.write(JSON.stringify(JSON.stringify(canon(JSON.parse(line)))) + "\\n");
}
"""


@pytest.mark.skipif(NODE is None, reason="no node to compare with")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_values, min_size=1, max_size=20))
def test_the_bytes_are_pi_flows_javascript_bytes(values: list[Any]) -> None:
    """pi-flows hashes ``JSON.stringify(canon(contract))``: node computes it for the same JSON
    texts, and ours must be the same string (hence the same UTF-8 bytes and identity)."""
    assert NODE is not None
    lines = "\n".join(json.dumps(v) for v in values) + "\n"
    out = subprocess.run(
        [NODE, "-e", CANON_JS], input=lines, capture_output=True, text=True, check=True
    )
    # ``split("\n")``: ``splitlines`` would also split at U+0085 and U+2028 inside a value.
    theirs = [json.loads(line) for line in out.stdout.split("\n") if line]
    assert theirs == [canonical_text(json.loads(json.dumps(v))) for v in values]


def single(**fields: Any) -> dict[str, Any]:
    return {"agent": "researcher", "why": WHY, **fields}


def refusal(document: object) -> FlowError:
    with pytest.raises(FlowError) as caught:
        parse_call(document)
    return caught.value


@pytest.mark.parametrize(
    ("broken", "path"),
    [
        ({k: v for k, v in contract().items() if k != "owner"}, "$.contract.owner"),
        (contract(extra=1), "$.contract"),
        (contract(objective="  "), "$.contract.objective"),
        (contract(sideEffectClass="destructive"), "$.contract.sideEffectClass"),
        (contract(budget={"maxCostUsd": -1}), "$.contract.budget.maxCostUsd"),
        (contract(budget={"wallClock": 5}), "$.contract.budget"),
        (contract(authority={"may": [], "mustNot": []}), "$.contract.authority.requiresApproval"),
        (contract(constraints=[""]), "$.contract.constraints[0]"),
        (contract(returnSchema=[]), "$.contract.returnSchema"),
        (contract(returnSchema={"type": "nonsense"}), "$.contract.returnSchema"),
        (contract(returnSchema={"pattern": "(("}), "$.contract.returnSchema"),
    ],
)
def test_a_malformed_contract_is_invalid_delegation_contract(
    broken: dict[str, Any], path: str
) -> None:
    error = refusal(single(contract=broken))
    assert error.code is ErrorCode.INVALID_DELEGATION_CONTRACT
    assert error.path == path
    assert error.document()["cause"].startswith("a delegation `contract` is malformed")


def test_a_roles_contract_is_checked_at_its_own_path() -> None:
    tasks = [
        {"agent": "researcher", "task": "a", "contract": contract()},
        {"agent": "researcher", "task": "b", "contract": contract(owner="")},
    ]
    assert refusal({"tasks": tasks, "why": WHY}).path == "$.tasks[1].contract.owner"
    nodes = [{"id": "a", "agent": "researcher", "task": "x", "contract": contract(owner="")}]
    error = refusal({"task": "t", "graph": {"nodes": nodes}, "why": WHY})
    assert error.code is ErrorCode.INVALID_DELEGATION_CONTRACT
    assert error.path == "$.graph.nodes[0].contract.owner"
    steps = [{"agent": "researcher", "task": "x", "contract": contract(returnSchema={"type": 1})}]
    error = refusal({"task": "t", "chain": steps, "why": WHY})
    assert (error.code, error.path) == (
        ErrorCode.INVALID_DELEGATION_CONTRACT,
        "$.chain[0].contract.returnSchema",
    )


def test_a_contract_may_replace_single_task_and_arrays_and_budget_may_be_empty() -> None:
    empty = contract(constraints=[], nonGoals=[], dependencies=[], acceptanceChecks=[], budget={})
    call = parse_call(single(contract=empty))
    assert call.contract == Contract.of(empty)
    assert call.roles()[0][1].task == ""
    assert refusal(single()).code is ErrorCode.INVALID_MODE


def test_return_requirements_are_appended_under_a_heading() -> None:
    assert return_requirements("do it", None, False) == "do it"
    assert return_requirements("do it", "  List files.  ", True) == (
        f"do it\n\n## Return contract\n- List files.\n- {EVIDENCE_REQUIREMENT}"
    )


def test_a_contracted_prompt_names_the_contract_its_identity_and_the_protocol() -> None:
    found = Contract.of(contract())
    prompt = contracted_task("", found, "Cite paths.", False)
    assert prompt.startswith("Find the configured sample identifier.\n\n## Return contract\n")
    assert "## Typed delegation contract" in prompt
    assert f'Set contractId to exactly "{found.contract_id}"' in prompt
    assert 'schemaVersion "pi-flows.return-envelope.v1"' in prompt
    assert found.contract_id == canonical_sha256(contract())

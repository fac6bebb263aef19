"""Contracts and return envelopes through the flow engine on fakes: the delegated prompt, a
valid envelope retained and handed on as a typed handoff envelope, and each envelope failure
kind refused before the dependent spawns (the fake runtime records no spawn of it)."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest

from application.flows.run_flow import FlowContext
from domain.flows.contracts import EVIDENCE_REQUIREMENT, Contract
from tests.fakes.flows import answer
from tests.unit.application.flows.engine import WHY, Engine
from tests.unit.application.flows.envelopes import ID, envelope, fenced
from tests.unit.domain.flows.test_contracts import contract


def chain(**fields: Any) -> dict[str, Any]:
    steps = [
        {"agent": "researcher", "task": "find it", "contract": contract()},
        {"agent": "reviewer", "task": "check {previous}"},
    ]
    return {"task": "g", "chain": steps, "why": WHY, **fields}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_contracted_single_is_told_the_contract_and_keeps_its_valid_envelope(
    engine: Engine,
) -> None:
    engine.scripted.scripts["single"] = answer(fenced(envelope()), tokens=9, cost=0.5)
    document = engine.run(
        {"agent": "researcher", "contract": contract(), "why": WHY, "requireEvidence": True}
    ).document()
    prompt = engine.prompts["single"]
    assert prompt.startswith("Find the configured sample identifier.\n\n## Return contract\n")
    assert EVIDENCE_REQUIREMENT in prompt
    assert f'Set contractId to exactly "{ID}"' in prompt
    (result,) = document["results"]
    assert document["status"] == "completed"
    assert result["contractId"] == ID
    assert result["envelope"]["data"] == {"answer": "s-42"}
    assert result["envelope"]["usage"] == {"input": 9, "output": 9, "cost": 0.5, "turns": 1}
    assert result["handoff"]["compatibility"] == "typed"
    assert result["handoff"]["contractId"] == ID
    assert result["handoff"]["provenance"] == {"agent": "researcher"}


def test_prose_results_are_legacy_prose_handoffs_with_return_requirements(
    engine: Engine,
) -> None:
    engine.scripted.scripts["step-1"] = answer("plain words")
    document = engine.run(
        {
            "task": "g",
            "chain": [
                {"agent": "researcher", "task": "a", "returnContract": "List the files."},
                {"agent": "reviewer", "task": "b", "requireEvidence": False},
            ],
            "why": WHY,
            "returnContract": "Top-level.",
            "requireEvidence": True,
        }
    ).document()
    assert engine.prompts["step-1"].endswith(
        f"## Return contract\n- List the files.\n- {EVIDENCE_REQUIREMENT}"
    )
    assert engine.prompts["step-2"].endswith("## Return contract\n- Top-level.")
    handoff = document["results"][0]["handoff"]
    assert handoff["compatibility"] == "legacy-prose"
    assert handoff["contractId"] is None
    assert handoff["data"] == {"text": "plain words"}
    assert handoff["provenance"] == {"agent": "researcher", "step": 1}
    assert handoff["retry"] == {"retryable": False}


def test_a_valid_envelope_is_handed_on_as_a_typed_handoff_envelope(engine: Engine) -> None:
    engine.scripted.scripts["step-1"] = answer(fenced(envelope()) + "\nPROSE-NOT-HANDED")
    document = engine.run(chain()).document()
    prompt = engine.prompts["step-2"]
    assert "PROSE-NOT-HANDED" not in prompt
    assert '"compatibility":"typed"' in prompt
    assert f'"contractId":"{ID}"' in prompt
    assert '"provenance":{"agent":"researcher","step":1}' in prompt
    assert [r["status"] for r in document["results"]] == ["completed", "completed"]


def refused(engine: Engine, document: dict[str, Any], code: str) -> dict[str, Any]:
    report = engine.run(document).document()
    # The rule under test: the dependent never spawned.
    assert engine.scripted.order() == ["step-1"]
    first, second = report["results"]
    assert first["status"] == "failed"
    assert first["error"]["code"] == code
    assert second["status"] == "skipped"
    assert report["status"] == "failed"
    assert report["summary"].startswith(f"Flow chain: stopped at step-1 (researcher): {code}.")
    assert isinstance(first, dict)
    return first


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("Found it: s-42.", "no fenced json block"),
        ('```json\n{"schemaVersion": \n```', "not strict JSON"),
        (fenced(envelope(extra=True)), "does not match flow-return-envelope-v1"),
        (fenced({k: v for k, v in envelope().items() if k != "data"}), "missing required"),
        (fenced(envelope(status="done")), "flow-return-envelope-v1"),
        (fenced(envelope(data={"answer": 42})), "data does not satisfy contract.returnSchema"),
        (fenced(envelope(data={"answer": "x", "more": 1})), "returnSchema"),
    ],
)
def test_an_invalid_envelope_is_refused_before_the_next_step(
    engine: Engine, text: str, fragment: str
) -> None:
    engine.scripted.scripts["step-1"] = answer(text)
    failed = refused(engine, chain(), "RETURN_ENVELOPE_INVALID")
    assert fragment in failed["error"]["message"]
    assert failed["contractId"] == ID
    assert "envelope" not in failed


@pytest.mark.parametrize(
    ("claimed", "shown"),
    [
        (None, "(missing)"),
        ("sha256:" + "0" * 64, "sha256:" + "0" * 64),
        (Contract.of(contract(owner="someone else")).contract_id, None),
    ],
)
def test_a_missing_or_stale_contract_id_is_a_mismatch(
    engine: Engine, claimed: str | None, shown: str | None
) -> None:
    body = envelope(contractId=claimed)
    if claimed is None:
        del body["contractId"]
    engine.scripted.scripts["step-1"] = answer(fenced(body))
    failed = refused(engine, chain(), "RETURN_CONTRACT_MISMATCH")
    assert f"expected contractId {ID}, received {shown or claimed}" in failed["error"]["message"]


def artifact_envelope(path: str, digest: str | None) -> str:
    digests = [] if digest is None else [{"artifact": path, "algorithm": "sha256", "value": digest}]
    return fenced(envelope(artifactReferences=[{"path": path}], digests=digests))


def test_a_declared_digest_that_matches_the_file_passes(engine: Engine) -> None:
    (engine.cwd / "out").mkdir()
    (engine.cwd / "out" / "report.txt").write_bytes(b"findings\n")
    engine.scripted.scripts["step-1"] = answer(
        artifact_envelope("out/report.txt", sha(b"findings\n").upper())
    )
    document = engine.run(chain()).document()
    assert engine.scripted.order() == ["step-1", "step-2"]
    assert document["results"][0]["envelope"]["digests"][0]["artifact"] == "out/report.txt"


def test_a_wrong_digest_is_a_digest_mismatch(engine: Engine) -> None:
    (engine.cwd / "report.txt").write_bytes(b"findings\n")
    engine.scripted.scripts["step-1"] = answer(artifact_envelope("report.txt", sha(b"other")))
    failed = refused(engine, chain(), "RETURN_DIGEST_MISMATCH")
    assert "artifactReferences[0].path" in failed["error"]["message"]


def test_a_wrong_digest_is_reported_before_a_schema_miss(engine: Engine) -> None:
    (engine.cwd / "report.txt").write_bytes(b"findings\n")
    body = envelope(
        artifactReferences=[{"path": "report.txt"}],
        digests=[{"artifact": "report.txt", "algorithm": "sha256", "value": sha(b"x")}],
        data={"answer": 1},
    )
    engine.scripted.scripts["step-1"] = answer(fenced(body))
    refused(engine, chain(), "RETURN_DIGEST_MISMATCH")


@pytest.mark.parametrize(
    ("setup", "path", "fragment"),
    [
        ("none", "missing.txt", "missing"),
        ("none", "../outside.txt", "escapes the child's cwd"),
        ("none", "/etc/hostname", "escapes the child's cwd"),
        ("link", "link.txt", "symlink"),
        ("dirlink", "linked/secret.txt", "real directories"),
        ("dir", "adir", "not a regular file"),
        ("none", "a/../..", "escapes"),
    ],
)
def test_unsafe_or_missing_artifacts_are_refused(
    engine: Engine, setup: str, path: str, fragment: str
) -> None:
    outside = engine.base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"s")
    if setup == "link":
        os.symlink(outside / "secret.txt", engine.cwd / "link.txt")
    elif setup == "dirlink":
        os.symlink(outside, engine.cwd / "linked")
    elif setup == "dir":
        (engine.cwd / "adir").mkdir()
    engine.scripted.scripts["step-1"] = answer(artifact_envelope(path, sha(b"s")))
    failed = refused(engine, chain(), "RETURN_ENVELOPE_INVALID")
    assert fragment in failed["error"]["message"]


def test_a_digest_for_an_unreferenced_artifact_is_invalid(engine: Engine) -> None:
    body = envelope(digests=[{"artifact": "x.txt", "algorithm": "sha256", "value": sha(b"")}])
    engine.scripted.scripts["step-1"] = answer(fenced(body))
    failed = refused(engine, chain(), "RETURN_ENVELOPE_INVALID")
    assert "digests[0].artifact is not one of the artifactReferences" in failed["error"]["message"]


@pytest.mark.parametrize("status", ["partial", "blocked", "failed"])
def test_incomplete_envelopes_fail_closed(engine: Engine, status: str) -> None:
    engine.scripted.scripts["step-1"] = answer(
        fenced(envelope(status=status, unresolvedQuestions=["Which file?"]))
    )
    failed = refused(engine, chain(), "RETURN_ENVELOPE_INCOMPLETE")
    assert f"status {status} with 1 unresolved question" in failed["error"]["message"]
    # Validated, then refused: the envelope is kept for the caller to read.
    assert failed["envelope"]["status"] == status


@pytest.mark.parametrize(("status", "spawned"), [("partial", 2), ("blocked", 2), ("failed", 1)])
def test_include_carries_partial_and_blocked_on_but_never_failed(
    engine: Engine, status: str, spawned: int
) -> None:
    engine.scripted.scripts["step-1"] = answer(fenced(envelope(status=status)))
    engine.run(chain(incompleteHandoffPolicy="include"))
    assert len(engine.scripted.order()) == spawned
    if spawned == 2:
        assert f'"status":"{status}"' in engine.prompts["step-2"]


def test_a_graph_dependent_never_spawns_on_a_rejected_envelope(engine: Engine) -> None:
    nodes = [
        {"id": "a", "agent": "researcher", "task": "x", "contract": contract()},
        {"id": "b", "agent": "researcher", "task": "y"},
        {"id": "c", "agent": "reviewer", "task": "{node.a}", "dependsOn": ["a", "b"]},
    ]
    engine.scripted.scripts["node-a"] = answer(fenced(envelope(data={})))
    document = engine.run({"task": "t", "graph": {"nodes": nodes}, "why": WHY}).document()
    assert sorted(engine.scripted.order()) == ["node-a", "node-b"]
    assert [r["status"] for r in document["results"]] == ["failed", "completed", "skipped"]
    assert document["results"][0]["error"]["code"] == "RETURN_ENVELOPE_INVALID"


def test_graph_nodes_do_not_fall_back_to_the_top_level_contract(engine: Engine) -> None:
    nodes = [{"id": "a", "agent": "researcher", "task": "x"}]
    engine.run({"task": "t", "graph": {"nodes": nodes}, "why": WHY, "contract": contract()})
    assert "Typed delegation contract" not in engine.prompts["node-a"]


def test_parallel_tasks_fall_back_to_the_top_level_contract(engine: Engine) -> None:
    engine.scripted.scripts["task-0"] = answer(fenced(envelope()))
    engine.scripted.scripts["task-1"] = answer("prose only")
    own = contract(owner="task one")
    document = engine.run(
        {
            "tasks": [
                {"agent": "researcher", "task": "a", "tier": "fast"},
                {"agent": "researcher", "task": "b", "tier": "fast", "contract": own},
            ],
            "contract": contract(),
            "why": WHY,
        }
    ).document()
    assert f'"{ID}"' in engine.prompts["task-0"]
    assert Contract.of(own).contract_id in engine.prompts["task-1"]
    assert [r["status"] for r in document["results"]] == ["completed", "failed"]
    assert document["results"][1]["error"]["code"] == "RETURN_ENVELOPE_INVALID"


def test_record_content_false_keeps_the_identity_not_the_envelope(engine: Engine) -> None:
    engine.scripted.scripts["single"] = answer(fenced(envelope()))
    document = engine.run(
        {
            "agent": "researcher",
            "task": "t",
            "contract": contract(),
            "why": WHY,
            "recordContent": False,
        }
    ).document()
    (result,) = document["results"]
    assert result["contractId"] == ID
    assert "envelope" not in result
    assert "handoff" not in result


def test_a_malformed_contract_spawns_nothing(engine: Engine) -> None:
    error = engine.refuse(
        {
            "task": "g",
            "chain": [{"agent": "researcher", "task": "a"}],
            "why": WHY,
            "contract": contract(returnSchema={"type": 7}),
        }
    )
    assert str(error.code) == "INVALID_DELEGATION_CONTRACT"


def test_the_live_view_never_sees_a_rejected_return_as_completed(engine: Engine) -> None:
    """The check runs at the spawn seam, before the run is reported to anyone."""
    seen: list[tuple[str, str | None]] = []

    def observer(job: Any, result: Any) -> None:
        seen.append((job.key, None if result is None else str(result.status)))

    engine.scripted.scripts["step-1"] = answer(fenced(envelope(contractId="sha256:" + "1" * 64)))
    engine.runner.run(chain(), FlowContext(cwd=str(engine.cwd)), observer=observer)
    assert seen == [("step-1", None), ("step-1", "failed")]


def test_a_contracts_own_budget_binds_the_child_that_fulfils_it(engine: Engine) -> None:
    """``contract.budget`` feeds the flow's ledger: 9 generated tokens cross the contract's
    ``maxGeneratedTokens`` of 5 at the completed response, with no flow ceiling set."""
    engine.scripted.scripts["single"] = answer(fenced(envelope()), tokens=9, cost=0.5)
    small = contract(budget={"timeoutMs": 30000, "maxGeneratedTokens": 5})
    document = engine.run({"agent": "researcher", "contract": small, "why": WHY}).document()
    (result,) = document["results"]
    assert result["status"] == "failed"
    assert result["error"]["code"] == "BUDGET_EXCEEDED"
    assert "Contract budget exhausted" in result["error"]["message"]
    # The same contract with room to spare completes.
    engine.scripted.scripts["single"] = answer(
        fenced(envelope(contractId=Contract.of(contract()).contract_id)), tokens=9
    )
    roomy = engine.run({"agent": "researcher", "contract": contract(), "why": WHY}).document()
    assert roomy["results"][0]["status"] == "completed"

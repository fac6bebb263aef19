"""The contract-budget seam of the flow ledger (``application.flows.budgets``), driven directly
with fake handles: the contracts part plugs its terms in through ``FlowBudgets(terms=...)``.
A contract budget is shared by contract id across the flow (chain: per step), stops a live run
on its total tokens too, tightens the timeout, and its notice names the contract id and the
envelope format. Also the adapter's reading of a response without a numeric cost."""

from __future__ import annotations

from adapters.pi_rpc.records import assistant_text, user_text
from application.flows.budgets import FlowBudgets, Governed, StopKind
from application.flows.contract_terms import ContractTerms
from application.ports import AssistantText, SteerDelivered
from domain.flows.budget import RETURN_ENVELOPE_FORMAT, Ceilings, Turn
from domain.flows.call_roles import FlowTask
from domain.flows.runs import ChildJob
from tests.fakes.child_runtime import FakeChild

CONTRACT = "sha256:" + "c" * 64
TERMS = ContractTerms(CONTRACT, Ceilings(max_tokens=100), timeout_ms=30_000)


def _job(key: str) -> ChildJob:
    return ChildJob(key, FlowTask("researcher", "t"), "t")


def _child(key: str) -> FakeChild:
    return FakeChild(request=None, sink=lambda _e: None, child_id=key)  # type: ignore[arg-type]


def _admit(budgets: FlowBudgets, key: str) -> tuple[Governed, FakeChild]:
    governed = budgets.admit(_job(key))
    assert isinstance(governed, Governed)
    child = _child(key)
    budgets.attach(governed, child)
    return governed, child


def test_a_contract_budget_is_shared_by_its_id_and_stops_live_runs_on_total_tokens() -> None:
    budgets = FlowBudgets(Ceilings(), terms=lambda job: TERMS)
    one, first = _admit(budgets, "task-0")
    two, second = _admit(budgets, "task-1")
    assert one.timeout_seconds(36_000.0) == 30.0  # the contract's timeout tightens the call's
    assert budgets.turn(one, Turn(40, 45)) is False  # 85 of 100: the window, shared by both
    for child in (first, second):
        (notice,) = child.steers
        assert f'"contractId": "{CONTRACT}"' in notice
        assert RETURN_ENVELOPE_FORMAT in notice
    budgets.observe(two, SteerDelivered("task-1", "task-1", second.steers[0]))
    assert budgets.observe(two, AssistantText("task-1", "task-1", "partial", 10, 10)) is True
    assert two.stop is not None
    assert (two.stop.kind, two.stop.graceful) == (StopKind.EXCEEDED, True)
    assert "Contract budget exhausted (maxTokens reached: 105 of 100" in two.stop.message
    # No further child under that contract spawns.
    refusal = budgets.admit(_job("task-2"))
    assert not isinstance(refusal, Governed)
    assert refusal.budget.contract_id == CONTRACT


def test_chain_resets_the_contract_budget_per_step() -> None:
    budgets = FlowBudgets(Ceilings(), terms=lambda job: TERMS, chain=True)
    step_one, _ = _admit(budgets, "step-1")
    budgets.turn(step_one, Turn(60, 60))
    budgets.release(step_one)
    # Step 1 spent its contract budget; step 2's is its own.
    assert isinstance(budgets.admit(_job("step-2")), Governed)


def test_the_flow_and_a_contract_budget_bind_independently() -> None:
    budgets = FlowBudgets(Ceilings(max_generated_tokens=50), terms=lambda job: TERMS)
    governed, child = _admit(budgets, "task-0")
    budgets.turn(governed, Turn(0, 45))  # the flow's window (90%), the contract's not (45%)
    (notice,) = child.steers
    assert notice.startswith("[pi-squad budget notice] Flow budget")
    assert budgets.turn(governed, Turn(0, 10)) is True
    assert governed.stop is not None
    assert governed.stop.key == "flow"
    assert [c["authority"] for c in budgets.document()["ceilings"]] == ["flow", "contract"]


def test_an_uncontracted_child_is_not_governed_by_a_contract_budget() -> None:
    budgets = FlowBudgets(Ceilings(), terms=lambda job: None)
    governed, child = _admit(budgets, "task-0")
    assert governed.keys == ()
    assert budgets.turn(governed, Turn(10**6, 10**6, 9.0, False)) is False
    assert child.steers == []


def test_the_adapter_reads_a_missing_or_non_numeric_cost_as_unreported() -> None:
    usage = {"input": 3, "output": 4, "cost": {"total": 0.25}}
    message = {"role": "assistant", "content": [{"type": "text", "text": "x"}], "usage": usage}
    assert assistant_text("t", "c", message).cost_reported is True
    for cost in (None, {}, {"total": "0.1"}, {"total": True}, {"total": -1}):
        read = assistant_text("t", "c", {**message, "usage": {**usage, "cost": cost}})
        assert (read.cost_reported, read.cost) == (False, 0.0)
    assert user_text({"role": "user", "content": [{"type": "text", "text": "a"}]}) == "a"
    assert user_text({"role": "user", "content": "b"}) == "b"

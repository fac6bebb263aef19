"""The budget rules as values (``domain.flows.budget``), over generated spends: which ceiling
refuses a spawn, which stops a live run, when the wrap-up window opens, what a notice says."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.flows.budget import (
    RETURN_ENVELOPE_FORMAT,
    WRAP_UP_MARKER,
    Authority,
    Budget,
    Ceilings,
    Dimension,
    Spend,
    Turn,
    disclosure,
)

tokens = st.integers(min_value=0, max_value=10_000)
limits = st.none() | st.integers(min_value=0, max_value=20_000)
costs = st.none() | st.floats(min_value=0, max_value=10, allow_nan=False)
turns = st.builds(
    Turn,
    tokens,
    tokens,
    st.floats(min_value=0, max_value=1, allow_nan=False),
    st.booleans(),
)
ceilings = st.builds(Ceilings, costs, limits, limits)
authorities = st.sampled_from(list(Authority))


def _charged(budget: Budget, charges: list[Turn]) -> Budget:
    for turn in charges:
        budget = budget.charge(turn)
    return budget


@given(authorities, ceilings, st.lists(turns, max_size=8))
def test_the_spend_is_the_sum_of_the_charged_responses(
    authority: Authority, limits: Ceilings, charges: list[Turn]
) -> None:
    budget = _charged(Budget(authority, limits), charges)
    assert budget.spend.tokens == sum(t.input_tokens + t.output_tokens for t in charges)
    assert budget.spend.generated_tokens == sum(t.output_tokens for t in charges)
    # An unreported cost is never counted (nor taken as a spend of its own).
    expected = sum(t.cost for t in charges if t.cost_reported)
    assert abs(budget.spend.cost_usd - expected) < 1e-9


@given(authorities, ceilings, st.lists(turns, max_size=8))
def test_a_spawn_is_refused_exactly_when_some_ceiling_is_reached(
    authority: Authority, limits: Ceilings, charges: list[Turn]
) -> None:
    budget = _charged(Budget(authority, limits), charges)
    reached = [
        d
        for d, limit in limits.limits().items()
        if limit is not None and budget.spend.of(d) >= limit
    ]
    assert (budget.refuses_spawn() is not None) == bool(reached)
    if reached:
        assert budget.refuses_spawn() == reached[0]


@given(authorities, ceilings, st.lists(turns, max_size=8))
def test_live_stops_and_the_wrap_up_window_follow_the_live_ceilings(
    authority: Authority, limits: Ceilings, charges: list[Turn]
) -> None:
    budget = _charged(Budget(authority, limits), charges)
    stop = budget.stops_live_run()
    if stop is not None:
        # Past a live ceiling is inside its window, and no spawn is allowed either.
        assert budget.in_wrap_up_window() is not None
        assert budget.refuses_spawn() is not None
    window = budget.in_wrap_up_window()
    if window is not None:
        limit = limits.limits()[window]
        assert limit is not None
        assert budget.spend.of(window) >= 0.8 * limit
    if authority is Authority.FLOW:
        # The flow's total-token ceiling only gates spawns: never stops, never steers.
        assert Dimension.TOKENS not in (stop, window)


def test_the_flow_total_token_ceiling_refuses_spawns_but_a_contracts_stops_the_run() -> None:
    limits = Ceilings(max_tokens=100)
    turn = Turn(60, 60, 0.0)
    flow = Budget(Authority.FLOW, limits).charge(turn)
    contract = Budget(Authority.CONTRACT, limits, key="sha256:x").charge(turn)
    assert flow.refuses_spawn() is Dimension.TOKENS
    assert flow.stops_live_run() is None
    assert contract.stops_live_run() is Dimension.TOKENS


def test_the_window_opens_at_eighty_percent() -> None:
    budget = Budget(Authority.FLOW, Ceilings(max_generated_tokens=1000))
    assert budget.charge(Turn(0, 799)).in_wrap_up_window() is None
    assert budget.charge(Turn(0, 800)).in_wrap_up_window() is Dimension.GENERATED
    assert budget.charge(Turn(0, 999)).stops_live_run() is None
    assert budget.charge(Turn(0, 1000)).stops_live_run() is Dimension.GENERATED


def test_a_notice_names_the_contract_id_and_envelope_format_when_contracted() -> None:
    budget = Budget(Authority.FLOW, Ceilings(max_cost_usd=1.0), Spend(cost_usd=0.85))
    plain = budget.wrap_up_notice()
    assert plain.startswith(WRAP_UP_MARKER)
    assert "$0.8500 of $1.0000" in plain
    assert "contractId" not in plain
    contracted = budget.wrap_up_notice(contract_id="sha256:" + "a" * 64)
    assert f'"contractId": "sha256:{"a" * 64}"' in contracted
    assert RETURN_ENVELOPE_FORMAT in contracted
    assert '"status": "partial"' in contracted
    other = budget.wrap_up_notice(contract_id="sha256:b", envelope_format="x.v2")
    assert "one x.v2 JSON object" in other


def test_disclosure_names_the_authority_and_collapses_identical_contract_ceilings() -> None:
    same = Ceilings(max_generated_tokens=2000)
    lines = disclosure(
        Ceilings(max_cost_usd=0.5, max_tokens=9000),
        {"sha256:a": same, "sha256:b": same, "sha256:c": Ceilings(max_cost_usd=0.1)},
    )
    assert lines == [
        "budget (flow): maxCostUsd $0.5000 · maxTokens 9000",
        "budget (contract ×2): maxGeneratedTokens 2000",
        "budget (contract): maxCostUsd $0.1000",
    ]
    # Uncapped is said by saying nothing: there is no hidden default.
    assert disclosure(Ceilings()) == []
    # A timeout-only contract is not a cost/token ceiling.
    assert disclosure(Ceilings(), {"sha256:t": Ceilings()}) == []

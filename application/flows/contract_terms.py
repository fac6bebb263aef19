"""What a delegation contract imposes on the flow child fulfilling it: its ceilings, a tighter
timeout, and the names its wrap-up notice uses (``FlowBudgets`` charges and stops by them)."""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from domain.flows.budget import RETURN_ENVELOPE_FORMAT, Ceilings
from domain.flows.runs import ChildJob


@attrs.frozen
class ContractTerms:
    """What a delegation contract imposes on the child fulfilling it (its contract budget):
    the ceilings, a tighter timeout, the identity and envelope format its wrap-up notice names.
    ``budget_key`` scopes the spend (default: the contract id, shared by every child of the
    flow under that contract; chain resets it per step, see ``FlowBudgets``)."""

    contract_id: str
    ceilings: Ceilings = attrs.field(factory=Ceilings)
    timeout_ms: int | None = None
    envelope_format: str = RETURN_ENVELOPE_FORMAT
    budget_key: str | None = None


# What the flow knows of a job's contract (none: an uncontracted child).
Terms = Callable[[ChildJob], ContractTerms | None]


def contract_terms(job: ChildJob) -> ContractTerms | None:
    """A contracted job's contract ``budget`` as terms: its ceilings (a token ceiling given as
    a fraction binds at the whole number below it), its ``timeoutMs``; ``None`` uncontracted."""
    if job.contract is None:
        return None
    budget = job.contract.document["budget"]

    def whole(name: str) -> int | None:
        value = budget.get(name)
        return None if value is None else math.floor(value)

    cost = budget.get("maxCostUsd")
    return ContractTerms(
        job.contract.contract_id,
        Ceilings(
            None if cost is None else float(cost), whole("maxTokens"), whole("maxGeneratedTokens")
        ),
        timeout_ms=whole("timeoutMs"),
    )

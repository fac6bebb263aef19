"""Flow and contract budgets as values: the ceilings, the spend charged at each completed model
response, and the decisions a ceiling takes (seed 004 "flow budget", flows-brief §8).

Accounting is pi-flows': ``cost += usage.cost``, ``tokens += input + output``, ``generated +=
output``. A ceiling is reached when the spend is at or above it. Which ceilings bind a live run:

- a **cost** or **generated-output** ceiling stops the child whose response reached it, and every
  other governed child at its next response; at 80% of one the live children are asked to wrap up;
- the flow's **total-token** ceiling (``maxTokens``) only refuses further spawns: it counts input
  the parent never chose to spend turn by turn, so it never stops nor steers a live run;
- a contract's total-token ceiling binds like a cost ceiling (it bounds the runs fulfilling one
  contract, so letting the current one finish would overspend exactly what it bounds).

Every budget refuses a spawn once any of its ceilings is reached. Pure: no clock, no I/O.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping

import attrs

# The fraction of a live-stopping ceiling at which governed children are asked to wrap up.
WRAP_UP_FRACTION = 0.8
# First words of every wrap-up notice: how a reader of the child's session recognises it.
WRAP_UP_MARKER = "[pi-squad budget notice]"
RETURN_ENVELOPE_FORMAT = "pi-flows.return-envelope.v1"


class Authority(enum.StrEnum):
    FLOW = "flow"
    CONTRACT = "contract"


class Dimension(enum.StrEnum):
    """A ceiling, by the field that sets it; the order is the order they are reported in."""

    COST = "maxCostUsd"
    GENERATED = "maxGeneratedTokens"
    TOKENS = "maxTokens"


@attrs.frozen
class Ceilings:
    """The ceilings a call (or a contract's ``budget``) sets; ``None`` is uncapped."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_generated_tokens: int | None = None

    @property
    def any(self) -> bool:
        return any(limit is not None for limit in self.limits().values())

    def limits(self) -> dict[Dimension, float | None]:
        return {
            Dimension.COST: self.max_cost_usd,
            Dimension.GENERATED: self.max_generated_tokens,
            Dimension.TOKENS: self.max_tokens,
        }

    def document(self) -> dict[str, float | int]:
        """The set ceilings by their call field (``maxCostUsd``...), in report order."""
        return {str(d): limit for d, limit in self.limits().items() if limit is not None}

    def line(self) -> str:
        """``maxCostUsd $0.5000 · maxGeneratedTokens 4000`` (the set ones only)."""
        return " · ".join(
            f"{d} {_amount(d, limit)}" for d, limit in self.limits().items() if limit is not None
        )


@attrs.frozen
class Turn:
    """One completed model response's usage. ``cost_reported``: the provider gave a numeric
    cost (a cost ceiling cannot be enforced on an unknown spend, which is never taken as 0)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    cost_reported: bool = True


@attrs.frozen
class Spend:
    cost_usd: float = 0.0
    tokens: int = 0
    generated_tokens: int = 0

    def plus(self, turn: Turn) -> Spend:
        cost = turn.cost if turn.cost_reported and math.isfinite(turn.cost) else 0.0
        return Spend(
            self.cost_usd + max(0.0, cost),
            self.tokens + max(0, turn.input_tokens) + max(0, turn.output_tokens),
            self.generated_tokens + max(0, turn.output_tokens),
        )

    def of(self, dimension: Dimension) -> float:
        if dimension is Dimension.COST:
            return self.cost_usd
        if dimension is Dimension.GENERATED:
            return self.generated_tokens
        return self.tokens


@attrs.frozen
class Budget:
    """One ceiling set and the spend charged against it. ``key`` names it in the flow: ``flow``,
    or a contract's budget scope (its contract id; a chain step's own, as chain resets it)."""

    authority: Authority
    ceilings: Ceilings
    spend: Spend = Spend()
    key: str = "flow"
    contract_id: str | None = None

    def charge(self, turn: Turn) -> Budget:
        return attrs.evolve(self, spend=self.spend.plus(turn))

    def _live(self) -> tuple[Dimension, ...]:
        if self.authority is Authority.CONTRACT:
            return (Dimension.COST, Dimension.GENERATED, Dimension.TOKENS)
        return (Dimension.COST, Dimension.GENERATED)

    def _reached(self, dimensions: tuple[Dimension, ...], fraction: float) -> Dimension | None:
        limits = self.ceilings.limits()
        for dimension in dimensions:
            limit = limits[dimension]
            if limit is not None and self.spend.of(dimension) >= limit * fraction:
                return dimension
        return None

    def refuses_spawn(self) -> Dimension | None:
        """Any ceiling reached: no further child spawns under this budget."""
        return self._reached(tuple(Dimension), 1.0)

    def stops_live_run(self) -> Dimension | None:
        """A live-stopping ceiling reached: the governed child stops at this response."""
        return self._reached(self._live(), 1.0)

    def in_wrap_up_window(self) -> Dimension | None:
        """A live-stopping ceiling at or past ``WRAP_UP_FRACTION``: live children wrap up."""
        return self._reached(self._live(), WRAP_UP_FRACTION)

    @property
    def enforces_cost(self) -> bool:
        return self.ceilings.max_cost_usd is not None

    @property
    def label(self) -> str:
        return "Flow" if self.authority is Authority.FLOW else "Contract"

    def spent_line(self, dimension: Dimension) -> str:
        """``$0.0420 of $0.0500``, ``3300 of 4000 generated tokens``."""
        limit = self.ceilings.limits()[dimension]
        assert limit is not None
        spent = self.spend.of(dimension)
        if dimension is Dimension.COST:
            return f"${spent:.4f} of ${limit:.4f}"
        noun = "generated tokens" if dimension is Dimension.GENERATED else "total tokens"
        return f"{int(spent)} of {int(limit)} {noun}"

    def exceeded_message(self, dimension: Dimension) -> str:
        return f"{self.label} budget exhausted ({dimension} reached: {self.spent_line(dimension)})"

    def unobservable_message(self) -> str:
        return (
            f"{self.label} cost budget cannot be enforced: a model response carried no numeric "
            "cost (maxCostUsd is set, and an unknown spend is never taken as 0)"
        )

    def wrap_up_notice(
        self, *, contract_id: str | None = None, envelope_format: str | None = None
    ) -> str:
        """The steered wrap-up request. A contracted child's names the ``contractId`` it must
        echo and the return-envelope format its final message must be."""
        dimension = self.in_wrap_up_window() or self._live()[0]
        reached = (
            self.spent_line(dimension)
            if self.ceilings.limits()[dimension] is not None
            else "near a ceiling"
        )
        lines = [
            f"{WRAP_UP_MARKER} {self.label} budget is nearly exhausted ({dimension}: {reached}).",
            "Stop working now and give your final answer in this turn; start no new tool calls.",
        ]
        if contract_id is not None:
            lines.append(
                f"Your final message must be one {envelope_format or RETURN_ENVELOPE_FORMAT} "
                f'JSON object with "contractId": "{contract_id}" and "status": "partial": record '
                'the work you did not finish as skipped coverage and in "unresolvedQuestions".'
            )
        else:
            lines.append(
                "Say plainly what you did not finish, as unresolved questions, instead of "
                "continuing past the budget."
            )
        return "\n".join(lines)

    def document(self) -> dict[str, object]:
        """The ceiling as disclosed (card, report): authority, the limits, and the spend."""
        found: dict[str, object] = {"authority": str(self.authority), **self.ceilings.document()}
        if self.contract_id is not None:
            found["contractId"] = self.contract_id
        found["spent"] = {
            "costUsd": self.spend.cost_usd,
            "tokens": self.spend.tokens,
            "generatedTokens": self.spend.generated_tokens,
        }
        return found

    def trace_attributes(self) -> Mapping[str, float | int | str]:
        """pi-flows' ``flow.budget.*`` attributes: the spend and the set limits."""
        found: dict[str, float | int | str] = {
            "flow.budget.authority": str(self.authority),
            "flow.budget.spent_cost_usd": self.spend.cost_usd,
            "flow.budget.spent_tokens": self.spend.tokens,
            "flow.budget.spent_generated_tokens": self.spend.generated_tokens,
        }
        limits = self.ceilings
        if limits.max_cost_usd is not None:
            found["flow.budget.limit_cost_usd"] = limits.max_cost_usd
        if limits.max_tokens is not None:
            found["flow.budget.limit_tokens"] = limits.max_tokens
        if limits.max_generated_tokens is not None:
            found["flow.budget.limit_generated_tokens"] = limits.max_generated_tokens
        return found


def disclosure(ceilings: Ceilings, contracts: Mapping[str, Ceilings] | None = None) -> list[str]:
    """The lines that disclose a call's ceilings with their authority, before the first child
    starts and on the card: the flow's, then one line per distinct contract ceiling set
    (identical ones collapsed). Nothing when uncapped: there is no hidden default."""
    lines = [f"budget (flow): {ceilings.line()}"] if ceilings.any else []
    seen: dict[Ceilings, int] = {}
    for limits in (contracts or {}).values():
        if limits.any:
            seen[limits] = seen.get(limits, 0) + 1
    for limits, count in seen.items():
        many = f" ×{count}" if count > 1 else ""
        lines.append(f"budget (contract{many}): {limits.line()}")
    return lines


def _amount(dimension: Dimension, limit: float) -> str:
    return f"${limit:.4f}" if dimension is Dimension.COST else str(int(limit))

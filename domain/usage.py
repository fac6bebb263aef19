"""What a child's model calls consumed, as Pi reported it: the one usage value of every face.

A squad task, a flow run and a delegation attempt all add up the same thing: each assistant
message Pi reports carries token counts per category and a cost. ``reported`` keeps which
categories were ever reported, so a receipt can say "never reported" (``None``) rather than a
misleading 0, while sums stay plain numbers.
"""

from __future__ import annotations

from typing import Literal

import attrs

Category = Literal["input", "output", "cache_read", "cache_write", "cost"]
CATEGORIES: tuple[Category, ...] = ("input", "output", "cache_read", "cache_write", "cost")


@attrs.frozen
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    turns: int = 0
    # the cost was computed from a model's rates rather than reported by the provider
    cost_estimated: bool = False
    reported: frozenset[Category] = frozenset()

    @classmethod
    def turn(
        cls,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        cost: float | None = None,
        cost_estimated: bool = False,
    ) -> Usage:
        """One assistant message's usage; a category given as ``None`` was not reported."""
        given: dict[Category, int | float | None] = {
            "input": input_tokens,
            "output": output_tokens,
            "cache_read": cache_read_tokens,
            "cache_write": cache_write_tokens,
            "cost": cost,
        }
        return cls(
            input_tokens=input_tokens or 0,
            output_tokens=output_tokens or 0,
            cache_read_tokens=cache_read_tokens or 0,
            cache_write_tokens=cache_write_tokens or 0,
            cost=cost or 0.0,
            turns=1,
            cost_estimated=cost_estimated,
            reported=frozenset(name for name, value in given.items() if value is not None),
        )

    def plus(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost=self.cost + other.cost,
            turns=self.turns + other.turns,
            cost_estimated=self.cost_estimated or other.cost_estimated,
            reported=self.reported | other.reported,
        )

    def reported_value(self, category: Category) -> int | float | None:
        """The category's sum, or ``None`` when no message ever reported it."""
        if category not in self.reported:
            return None
        values: dict[Category, int | float] = {
            "input": self.input_tokens,
            "output": self.output_tokens,
            "cache_read": self.cache_read_tokens,
            "cache_write": self.cache_write_tokens,
            "cost": self.cost,
        }
        return values[category]

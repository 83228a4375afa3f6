"""What a request costs: token counts times an instance's prices, in integer nano-units.

Money is kept as integers of 1e-9 of the config's currency unit (a "nano"), so
every store adds exactly (Redis INCRBY, SQLite INTEGER) and no float rounding
piles up over a month of requests. A price per million tokens of p is p * 1000
nanos per token: $0.15 per million is 150 nanos a token, and a $1,000,000 budget
is 1e15 nanos, well inside the 2**53 a Lua number holds exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from semproxy.types import Usage

NANOS = 1_000_000_000  # nanos in one unit of money


@dataclass(frozen=True, slots=True)
class Price:
    """Nanos per token; `cached_input` is what a prompt-cache hit costs per token."""

    input: int
    output: int
    cached_input: int

    @classmethod
    def per_million(cls, input: float, output: float, cached_input: float | None = None
                    ) -> Price:
        cached = input if cached_input is None else cached_input
        return cls(_nanos_per_token(input), _nanos_per_token(output), _nanos_per_token(cached))

    def cost(self, usage: Usage) -> int:
        """The nanos an answer costs: uncached input, cached input and output at their prices."""
        cached = usage.cached_input if usage.cached_input < usage.input else usage.input
        return ((usage.input - cached) * self.input + cached * self.cached_input
                + usage.output * self.output)

    def most(self, other: Price) -> Price:
        """Each price the higher of the two: the worst case before an instance is picked."""
        return Price(max(self.input, other.input), max(self.output, other.output),
                     max(self.cached_input, other.cached_input))


FREE = Price(0, 0, 0)


def _nanos_per_token(per_million: float) -> int:
    return round(per_million * 1000)


def to_money(nanos: int) -> float:
    return nanos / NANOS


def from_money(amount: float) -> int:
    return round(amount * NANOS)

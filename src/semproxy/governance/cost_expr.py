"""APISIX `limit_strategy: expression`: a request's cost from its usage, by a small formula.

APISIX loads `cost_expr` as Lua code in a sandbox (arithmetic, `abs ceil floor
max min`, usage fields as variables, a missing field is 0; a negative result
counts 0, a non-finite one is an error and charges nothing; the result is
rounded half up). Here the same expressions are parsed by a whitelist grammar
into a tree and walked; nothing is ever handed to `eval`:

    expr  := term (("+" | "-") term)*
    term  := unary (("*" | "/" | "%") unary)*
    unary := "-" unary | power
    power := atom ("^" unary)?                    (right-associative, as in Lua)
    atom  := number | name | name "(" expr ("," expr)* ")" | "(" expr ")"

A name is a usage field, bare (`input_tokens`) or a dotted path
(`prompt_tokens_details.cached_tokens`). What Lua would also accept and a cost
never needs (comparisons, `and`/`or`, strings, assignments) is refused when the
config loads, with the reason.

Admission must hold a request's worst case before the answer exists, so every
expression also gets an upper bound by interval arithmetic: an input field lies
in [0, input bound], an output field in [0, granted output tokens], and each
operation maps intervals to an interval that contains every result. A
division by something that can be 0, a variable exponent or a field of neither
kind would make that bound infinite: such expressions are refused (APISIX
accepts them because it reserves nothing).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from semproxy.types import Usage

MAX_LENGTH = 500
MAX_DEPTH = 32
_TOKEN = re.compile(r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"
                    r"|(?P<op>[-+*/%^(),]))")
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs, "ceil": math.ceil, "floor": math.floor, "max": max, "min": min}
_INPUT = re.compile(r"^(?:.*_)?(?:input|prompt|cached)_tokens$|^(?:prompt|input)_tokens_details\.")
_OUTPUT = re.compile(r"^(?:.*_)?(?:output|completion|reasoning)_tokens$"
                     r"|^(?:completion|output)_tokens_details\.")
Interval = tuple[float, float]
_ANY: Interval = (-math.inf, math.inf)


class CostExprError(ValueError):
    """The expression is not one semproxy can evaluate and bound (message says why)."""


@dataclass(frozen=True, slots=True)
class Node:
    """One node of the tree: `num` (value), `var` (name), `neg`, an operator, or `call`."""

    kind: str
    value: float = 0.0
    name: str = ""
    args: tuple[Node, ...] = ()


@dataclass(frozen=True, slots=True)
class CostExpr:
    text: str
    root: Node

    def evaluate(self, usage: Usage, raw: Mapping[str, Any] | None = None) -> int | None:
        """The cost of an answer (APISIX rounding), or None when the result is not finite."""
        try:
            value = _eval(self.root, lambda name: lookup(name, usage, raw))
        except (ArithmeticError, ValueError):
            return None
        if not math.isfinite(value):
            return None
        return math.floor(max(value, 0.0) + 0.5)

    def upper(self, input_tokens: int, output_tokens: int) -> int:
        """The largest cost an answer within these bounds can have (the hold)."""
        _, high = _bound(self.root, (0.0, float(input_tokens)), (0.0, float(output_tokens)))
        return math.floor(max(high, 0.0) + 0.5)


def compile_cost(text: str) -> CostExpr:
    """Parse and check an expression; CostExprError says what is wrong."""
    if len(text) > MAX_LENGTH:
        raise CostExprError(f"longer than {MAX_LENGTH} characters")
    root = _Parser(text).parse()
    low, high = _bound(root, (0.0, 1.0), (0.0, 1.0))
    if not (math.isfinite(low) and math.isfinite(high)):
        raise CostExprError("its worst case is unbounded (a division by something that can "
                            "be 0, or a variable exponent): admission could not reserve it")
    return CostExpr(text, root)


def field_kind(name: str) -> str | None:
    """'input', 'output', 'total' or None (a field whose size cannot be bounded)."""
    if name == "total_tokens":
        return "total"
    if _OUTPUT.match(name):
        return "output"
    if _INPUT.match(name):
        return "input"
    return None


def lookup(name: str, usage: Usage, raw: Mapping[str, Any] | None) -> float:
    """A field's value: from the provider's raw usage when given, else from `usage`."""
    if raw is not None:
        found = _raw(raw, name)
        if found is not None:
            return found
    if name in ("input_tokens", "prompt_tokens"):
        return usage.input
    if name in ("output_tokens", "completion_tokens"):
        return usage.output
    if name == "total_tokens":
        return usage.total
    if name.endswith("cached_tokens") or name == "cache_read_input_tokens":
        return usage.cached_input
    return 0.0


def _raw(raw: Mapping[str, Any], name: str) -> float | None:
    """A dotted path is followed exactly; a bare name is looked up level by level (the
    larger value when one level has it twice, as APISIX does)."""
    if "." in name:
        node: Any = raw
        for part in name.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return _number(node)
    level: list[Mapping[str, Any]] = [raw]
    for _ in range(4):
        hits = [v for m in level if (v := _number(m.get(name))) is not None]
        if hits:
            return max(hits)
        level = [v for m in level for v in m.values() if isinstance(v, Mapping)]
    return None


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else None


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = self._lex(text)
        self.at = 0
        self.depth = 0

    @staticmethod
    def _lex(text: str) -> list[tuple[str, str]]:
        tokens, pos = [], 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                if not text[pos:].strip():
                    break
                bad = text[pos:].lstrip()[:12]
                raise CostExprError(f"unexpected {bad!r}: only numbers, usage fields, "
                                    "+ - * / % ^, parentheses and abs ceil floor max min")
            kind = match.lastgroup or ""
            tokens.append((kind, match.group(kind)))
            pos = match.end()
        return tokens

    def parse(self) -> Node:
        if not self.tokens:
            raise CostExprError("empty expression")
        node = self._expr()
        if self.at < len(self.tokens):
            raise CostExprError(f"unexpected {self.tokens[self.at][1]!r}")
        return node

    def _peek(self) -> str:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else ""

    def _take(self, want: str) -> None:
        if self._peek() != want:
            raise CostExprError(f"expected {want!r}, found {self._peek() or 'the end'!r}")
        self.at += 1

    def _expr(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CostExprError(f"nested more than {MAX_DEPTH} levels")
        node = self._term()
        while self._peek() in ("+", "-"):
            op = self._peek()
            self.at += 1
            node = Node(op, args=(node, self._term()))
        self.depth -= 1
        return node

    def _term(self) -> Node:
        node = self._unary()
        while self._peek() in ("*", "/", "%"):
            op = self._peek()
            self.at += 1
            node = Node(op, args=(node, self._unary()))
        return node

    def _unary(self) -> Node:
        if self._peek() == "-":
            self.at += 1
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise CostExprError(f"nested more than {MAX_DEPTH} levels")
            node = Node("neg", args=(self._unary(),))
            self.depth -= 1
            return node
        base = self._atom()
        if self._peek() == "^":
            self.at += 1
            return Node("^", args=(base, self._unary()))
        return base

    def _atom(self) -> Node:
        if self.at >= len(self.tokens):
            raise CostExprError("the expression ends too early")
        kind, text = self.tokens[self.at]
        self.at += 1
        if kind == "num":
            return Node("num", float(int(text, 16)) if text[:2] in ("0x", "0X") else float(text))
        if text == "(":
            node = self._expr()
            self._take(")")
            return node
        if kind != "name":
            raise CostExprError(f"unexpected {text!r}")
        if self._peek() == "(":
            return self._call(text)
        if field_kind(text) is None:
            raise CostExprError(f"{text}: not a token count of the usage (input, prompt, cached, "
                                "output, completion, reasoning or total tokens)")
        return Node("var", name=text)

    def _call(self, name: str) -> Node:
        short = name.removeprefix("math.")
        if short not in _FUNCTIONS:
            raise CostExprError(f"{name}: not an allowed function (abs, ceil, floor, max, min)")
        self._take("(")
        args = [self._expr()]
        while self._peek() == ",":
            self.at += 1
            args.append(self._expr())
        self._take(")")
        if short in ("abs", "ceil", "floor") and len(args) != 1:
            raise CostExprError(f"{name} takes one argument")
        return Node("call", name=short, args=tuple(args))


def _eval(node: Node, var: Callable[[str], float]) -> float:
    kind = node.kind
    if kind == "num":
        return node.value
    if kind == "var":
        return var(node.name)
    args = [_eval(a, var) for a in node.args]
    if kind == "call":
        return float(_FUNCTIONS[node.name](*args))
    if kind == "neg":
        return -args[0]
    a, b = args
    if kind == "+":
        return a + b
    if kind == "-":
        return a - b
    if kind == "*":
        return a * b
    if kind == "/":
        return a / b if b else math.copysign(math.inf, a) if a else math.nan
    if kind == "%":
        return a - math.floor(a / b) * b
    return float(a**b)


def _bound(node: Node, inp: Interval, out: Interval) -> Interval:
    """An interval holding every value of `node` for fields within their bounds."""
    kind = node.kind
    if kind == "num":
        return node.value, node.value
    if kind == "var":
        field = field_kind(node.name)
        return inp if field == "input" else out if field == "output" else \
            (0.0, inp[1] + out[1])
    args = [_bound(a, inp, out) for a in node.args]
    if not all(math.isfinite(low) and math.isfinite(high) for low, high in args):
        return _ANY
    if kind == "call":
        return _call_bound(node.name, args)
    if kind == "neg":
        return -args[0][1], -args[0][0]
    (a, b), (c, d) = args
    if kind == "+":
        return a + c, b + d
    if kind == "-":
        return a - d, b - c
    if kind == "*":
        products = (a * c, a * d, b * c, b * d)
        return min(products), max(products)
    if kind == "/":
        if c <= 0 <= d:
            return _ANY
        quotients = (a / c, a / d, b / c, b / d)
        return min(quotients), max(quotients)
    if kind == "%":
        return (0.0, d) if c > 0 else _ANY  # Lua: a % b lies in [0, b) for b > 0
    return _power(args[0], args[1])


def _power(base: Interval, exponent: Interval) -> Interval:
    (a, b), (e, f) = base, exponent
    if e != f or a < 0 or (e < 0 and a <= 0):
        return _ANY  # a variable exponent, or a negative base: no simple monotone bound
    try:
        ends = (a**e, b**e)
    except OverflowError:
        return _ANY
    return min(ends), max(ends)


def _call_bound(name: str, args: list[Interval]) -> Interval:
    if name == "max":
        return max(a for a, _ in args), max(b for _, b in args)
    if name == "min":
        return min(a for a, _ in args), min(b for _, b in args)
    (a, b), = args
    if name == "abs":
        return (a, b) if a >= 0 else (-b, -a) if b <= 0 else (0.0, max(-a, b))
    if name == "ceil":
        return float(math.ceil(a)), float(math.ceil(b))
    return float(math.floor(a)), float(math.floor(b))

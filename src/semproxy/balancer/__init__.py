"""Balancers: pure, synchronous pickers (semantic routing has its own package, `semantic/`)."""

from semproxy.balancer.base import Picker

__all__ = ["Picker"]

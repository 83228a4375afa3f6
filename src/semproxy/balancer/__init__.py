"""Balancers: pure, synchronous pickers and the similarity math for semantic routing."""

from semproxy.balancer.base import Picker

__all__ = ["Picker"]

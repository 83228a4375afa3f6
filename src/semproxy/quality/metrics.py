"""Routing metrics from (expected, picked) pairs: a confusion matrix and what it implies.

Pure numpy, so `calibrate` can evaluate thousands of candidate thresholds. The
catchall is a class like any other: a prompt labelled null is right only when
it lands on the catchall, and a specialist prompt sent there is a miss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semproxy.quality.rate import MeanRate, Rate, sample_warnings

IntArray = npt.NDArray[np.intp]


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


@dataclass(frozen=True, slots=True)
class Confusion:
    """counts[i, j]: prompts that belong to labels[i] and went to labels[j].

    The catchall is the last label.
    """

    labels: tuple[str, ...]
    counts: IntArray

    @classmethod
    def from_codes(cls, labels: Sequence[str], expected: IntArray, got: IntArray) -> Confusion:
        n = len(labels)
        flat = np.bincount(np.asarray(expected) * n + np.asarray(got), minlength=n * n)
        return cls(tuple(labels), flat.reshape(n, n).astype(np.intp))

    @classmethod
    def from_names(cls, labels: Sequence[str], expected: Sequence[str], got: Sequence[str]
                   ) -> Confusion:
        index = {name: i for i, name in enumerate(labels)}
        return cls.from_codes(labels, np.array([index[e] for e in expected], dtype=np.intp),
                              np.array([index[g] for g in got], dtype=np.intp))

    @property
    def catchall(self) -> str:
        return self.labels[-1]

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def accuracy(self) -> float | None:
        return _ratio(float(np.trace(self.counts)), self.total)

    def recall(self, i: int) -> float | None:
        return _ratio(float(self.counts[i, i]), float(self.counts[i].sum()))

    def precision(self, i: int) -> float | None:
        return _ratio(float(self.counts[i, i]), float(self.counts[:, i].sum()))

    def balanced_accuracy(self) -> float | None:
        """Mean recall over the labels that occur, the catchall included.

        Unlike accuracy it does not let a large class hide a small one: with
        3,000 in-scope and 100 out-of-scope prompts, a router that never uses
        the catchall can still reach 97% accuracy, but here the catchall's
        zero recall counts as much as any specialist's.
        """
        recalls = [r for i in range(len(self.labels)) if (r := self.recall(i)) is not None]
        return float(np.mean(recalls)) if recalls else None

    def in_scope_accuracy(self) -> float | None:
        """Of the prompts meant for a specialist, the share that reached it."""
        inner = self.counts[:-1]
        return _ratio(float(np.trace(inner)), float(inner.sum()))

    def catchall_recall(self) -> float | None:
        return self.recall(len(self.labels) - 1)

    def routed_precision(self) -> float | None:
        """Of the prompts sent to a specialist (not the catchall), the share that were right."""
        routed = self.counts[:, :-1]
        return _ratio(float(np.trace(routed)), float(routed.sum()))

    def recall_rate(self, i: int) -> Rate:
        return Rate(int(self.counts[i, i]), int(self.counts[i].sum()))

    def precision_rate(self, i: int) -> Rate:
        return Rate(int(self.counts[i, i]), int(self.counts[:, i].sum()))

    def rates(self) -> dict[str, Rate | MeanRate]:
        """The headline figures as counted rates (value, n, 95% interval)."""
        inner, routed = self.counts[:-1], self.counts[:, :-1]
        return {
            "accuracy": Rate(int(np.trace(self.counts)), self.total),
            "balanced_accuracy": MeanRate(tuple(self.recall_rate(i)
                                                for i in range(len(self.labels)))),
            "in_scope_accuracy": Rate(int(np.trace(inner)), int(inner.sum())),
            "catchall_recall": self.recall_rate(len(self.labels) - 1),
            "routed_precision": Rate(int(np.trace(routed)), int(routed.sum())),
        }

    def warnings(self) -> list[str]:
        return sample_warnings(self.labels, [int(v) for v in self.counts.sum(axis=1)])

    def __add__(self, other: Confusion) -> Confusion:
        """Pooled counts of two confusions over the same labels (cross-validation folds)."""
        if self.labels != other.labels:
            raise ValueError("cannot pool confusions over different labels")
        return Confusion(self.labels, self.counts + other.counts)

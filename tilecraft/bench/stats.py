"""Summary statistics of repeated timings.

Pure Python on purpose: the statistics are tested on a CPU-only machine against hand-computed values, and
a benchmark's numbers must not depend on whether numpy happens to be installed.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

__all__ = ["Stats", "percentile", "summarize"]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) of already-sorted values, interpolating linearly.

    Same convention as numpy's default (``method="linear"``): rank ``q/100 * (n-1)`` between neighbours.
    """
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of an empty sample")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must lie in [0, 100], got {q}")
    rank = q / 100.0 * (n - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, n - 1)
    frac = rank - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


@dataclass(frozen=True)
class Stats:
    """Order statistics of a sample of times (all in the sample's unit, milliseconds in this package)."""

    n: int
    median: float
    mean: float
    stdev: float
    min: float
    max: float
    p10: float
    p25: float
    p75: float
    p90: float

    @property
    def iqr(self) -> float:
        """Interquartile range p75 - p25."""
        return self.p75 - self.p25

    @property
    def rel_spread(self) -> float:
        """(p90 - p10) / median: how noisy the measurement was; a few percent is normal for GPU kernels."""
        return (self.p90 - self.p10) / self.median if self.median > 0 else math.inf

    def to_dict(self) -> dict[str, float]:
        """Plain dict for JSON, with the derived iqr included."""
        d = asdict(self)
        d["iqr"] = self.iqr
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Stats":
        """Inverse of :meth:`to_dict` (derived fields are ignored)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})


def summarize(samples: Iterable[float]) -> Stats:
    """Median, mean, sample standard deviation, extremes and the 10/25/75/90th percentiles of ``samples``."""
    xs = sorted(float(x) for x in samples)
    n = len(xs)
    if n == 0:
        raise ValueError("cannot summarize an empty sample")
    if any(math.isnan(x) for x in xs):
        raise ValueError("sample contains NaN")
    mean = math.fsum(xs) / n
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    return Stats(
        n=n,
        median=percentile(xs, 50),
        mean=mean,
        stdev=math.sqrt(var),
        min=xs[0],
        max=xs[-1],
        p10=percentile(xs, 10),
        p25=percentile(xs, 25),
        p75=percentile(xs, 75),
        p90=percentile(xs, 90),
    )

"""Median and its distribution-free 95% interval (DESIGN §7), for the bench summary only.

The warehouse computes its own intervals in dbt; this is the same formula so the numbers a
contributor sees at the end of `benchwh bench` match what the site will show for one run.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import comb


@dataclass(frozen=True)
class Interval:
    median: float
    low: float
    high: float
    n: int
    method: str  # "order-statistic" or "min-max" (n <= 5: no order statistic reaches 95%)


def _binom_cdf_half(n: int, k: int) -> float:
    """P(Binomial(n, 1/2) <= k)."""
    return sum(comb(n, i) for i in range(k + 1)) / 2**n


def order_statistic_k(n: int) -> int | None:
    """Largest k with P(Binomial(n, 1/2) <= k-1) <= 0.025, or None when no k qualifies."""
    best = None
    for k in range(1, n // 2 + 1):
        if _binom_cdf_half(n, k - 1) <= 0.025:
            best = k
        else:
            break
    return best


def median(values: list[float]) -> float:
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("median of no values")
    mid = n // 2
    return xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2


def median_interval(values: list[float]) -> Interval:
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        raise ValueError("interval of no values")
    k = order_statistic_k(n)
    if k is None:
        return Interval(median(xs), xs[0], xs[-1], n, "min-max")
    return Interval(median(xs), xs[k - 1], xs[n - k], n, "order-statistic")

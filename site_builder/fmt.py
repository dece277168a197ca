"""How numbers read on the pages (the browser test formats expected cells with these too)."""
from __future__ import annotations

import math


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def tps(x) -> str:
    """Three significant figures, thousands grouped: 354, 99.9, 5.62, 24,549."""
    if _missing(x):
        return "—"
    x = float(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def interval(lo, hi) -> str:
    return "—" if _missing(lo) or _missing(hi) else f"{tps(lo)} to {tps(hi)}"


def rank_range(best, worst, of) -> str:
    if _missing(best) or _missing(of):
        return "—"
    return f"#{best} of {of}" if best == worst else f"#{best}–{worst} of {of}"


def count(n) -> str:
    return "—" if _missing(n) else f"{int(n):,}"


def seconds(ms) -> str:
    return "—" if _missing(ms) else f"{float(ms) / 1000:.2f} s"


def gb(n_bytes) -> str:
    return "—" if _missing(n_bytes) else f"{float(n_bytes) / 1e9:.1f} GB"


def card_gb(n_bytes) -> str:
    """A card's memory as it is sold: a '24 GB' card holds 24 x 2^30 bytes."""
    return "—" if _missing(n_bytes) else f"{float(n_bytes) / 2**30:.3g} GB"


def usd(x) -> str:
    if _missing(x):
        return "—"
    return f"${float(x):.2f}" if float(x) >= 0.1 else f"${float(x):.3f}"


def tokens_short(n) -> str:
    """4096 -> 4K, 131072 -> 128K."""
    if _missing(n):
        return "—"
    n = int(n)
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else f"{n:,}"


def grams(x) -> str:
    return "—" if _missing(x) else f"{float(x):,.0f} g"

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


def gib(n_bytes) -> str:
    """Every size on every page in one unit, 2^30 bytes (a card sold as '24 GB' holds 24 GiB)."""
    if _missing(n_bytes):
        return "—"
    x = float(n_bytes) / 2**30
    return f"{x:,.0f} GiB" if x >= 100 else f"{x:.2g} GiB" if x < 1 else f"{x:.1f} GiB".replace(".0 GiB", " GiB")


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


def watts(x) -> str:
    return "—" if _missing(x) else f"{float(x):,.0f} W"


def bandwidth(x) -> str:
    return "—" if _missing(x) else f"{float(x):,.0f} GB/s"


def ratio(x) -> str:
    """3.5×"""
    return "—" if _missing(x) else f"{float(x):.1f}×"


def percent(x) -> str:
    return "—" if _missing(x) else f"{float(x):.0f}%"


def build_label(quant, quantizer) -> str:
    """Q4_K_M by bartowski; a build whose source names no file is its quant."""
    return f"{quant} by {quantizer}" if quantizer else str(quant or "—")


SOURCE_LABELS = {"localscore": "LocalScore", "runfile": "signed run", "llama-bench": "llama-bench",
                 "ollama": "Ollama", "llama-server": "llama-server", "vllm": "vLLM"}


def source_label(sources) -> str:
    """localscore, runfile -> LocalScore, signed run"""
    return ", ".join(SOURCE_LABELS.get(s.strip(), s.strip()) for s in str(sources or "").split(",") if s.strip())


STOP_REASONS = {"forgot": "the model lost the needle", "could_not_hold": "the machine could not hold the prompt",
                "reached_trained_context": "it reached its trained context", "unknown": "the file does not say why"}


def stop_reason_text(reason) -> str:
    return STOP_REASONS.get(reason, str(reason or "not said"))


def repos(text) -> list[str]:
    """site.models.gguf_repos ('a/x;b/y') as the repositories a page links."""
    return [r.strip() for r in str(text or "").split(";") if r.strip()]


def number(x, digits: int = 2) -> str:
    """A plain figure with up to `digits` decimals: 7.49, 1.24, 24."""
    return "—" if _missing(x) else f"{float(x):,.{digits}f}".rstrip("0").rstrip(".")


CELL_TEXT = {"recalled": "recalled", "lost": "asked and lost", "not_held": "the machine could not hold the prompt",
             "not_asked": "not asked"}


def cell_text(state) -> str:
    return CELL_TEXT.get(state, str(state))

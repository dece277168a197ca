"""The landing rules the Lander applies and the landing asset checks report, each written once."""
from __future__ import annotations

import os
import statistics
from typing import Any

# At most this share of a run's parsed records may be quarantined (the asset check
# `quarantine_share`), and of a source's new pages rejected (localscore).
QUARANTINE_SHARE_LIMIT = 0.05

# The volume rule (snapshot sources): a new snapshot needs at least `volume_min_share` (default
# half) of a robust reference, the median (low) of the last VOLUME_REFERENCE good landings, so
# one outlier snapshot (100,000 models once) cannot block a source for good.
VOLUME_REFERENCE = 5
DEFAULT_VOLUME_MIN_SHARE = 0.5


def volume_reference(totals: list[int]) -> int | None:
    """The reference a new snapshot is compared with: median_low of the last good landings."""
    recent = totals[-VOLUME_REFERENCE:]
    return statistics.median_low(recent) if recent else None


def volume_min_share(source: Any) -> float:
    """The source's share (Source.volume_min_share), overridden by env BENCHWH_<NAME>_VOLUME_MIN_SHARE
    (0 turns the rule off for that source)."""
    value = os.environ.get(f"BENCHWH_{source.name.upper()}_VOLUME_MIN_SHARE")
    if value not in (None, ""):
        return float(value)
    return float(getattr(source, "volume_min_share", DEFAULT_VOLUME_MIN_SHARE))


def volume_short(source: Any, total: int, earlier: list[int]) -> tuple[bool, int | None]:
    """(whether a snapshot of `total` rows is too small after the good landings `earlier`, the reference)."""
    reference = volume_reference(earlier)
    return reference is not None and total < volume_min_share(source) * reference, reference


def volume_rule_text(share: float = DEFAULT_VOLUME_MIN_SHARE) -> str:
    """How the rule reads in messages: 'half' or '0.3 times'."""
    return "half" if share == 0.5 else f"{share:g} times"

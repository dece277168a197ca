"""The landing rules the Lander applies and the landing asset checks report, each written once."""
from __future__ import annotations

import os
import statistics
from typing import Any

# At most this share of a run's parsed records may be quarantined (the asset check
# `quarantine_share`), and of a source's new pages rejected (localscore).
QUARANTINE_SHARE_LIMIT = 0.05

# The volume rule (snapshot sources): a new snapshot needs at least `volume_min_share` (default
# half) of a robust reference, the median (low) of the last VOLUME_REFERENCE snapshots seen, so
# one outlier snapshot (100,000 models once) cannot block a source. Snapshots the rule refused
# count among those seen (issue #53): after three outliers in five the median is theirs and a
# normal snapshot is refused, but three refused normal ones make the median normal again, so the
# fourth lands; a lasting change upstream (a real drop) is accepted the same way, after three.
VOLUME_REFERENCE = 5
DEFAULT_VOLUME_MIN_SHARE = 0.5
# how a volume refusal's reason reads (the ledger keeps the reason; older entries read the same)
VOLUME_REFUSAL_MARK = "valid rows, fewer than"


def volume_reference(totals: list[int]) -> int | None:
    """The reference a new snapshot is compared with: median_low of the last snapshots seen."""
    recent = totals[-VOLUME_REFERENCE:]
    return statistics.median_low(recent) if recent else None


def counts_for_volume(outcome: Any) -> bool:
    """Whether a ledger outcome is a snapshot the volume baseline counts: landed, or refused by
    the volume rule alone (its rows were valid; only its size was doubted)."""
    return outcome.status == "landed" or (outcome.status == "failed" and VOLUME_REFUSAL_MARK in (outcome.reason or ""))


def volume_override_env(source: Any) -> str:
    return f"BENCHWH_{source.name.upper()}_VOLUME_MIN_SHARE"


def volume_min_share(source: Any) -> float:
    """The source's share (Source.volume_min_share), overridden by env BENCHWH_<NAME>_VOLUME_MIN_SHARE
    (0 turns the rule off for that source)."""
    value = os.environ.get(volume_override_env(source))
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

"""One freshness verdict, used by `status`, `sources list` and the landing asset's check.

Freshness is the age of the last fetch whose body landed (a 304 confirming a landed body counts)
against the source's declared hours. Data replayed from a bundled recording (`--offline`, demo
data) is judged as of that recording, not as of today: an offline build is as fresh as the day
it was recorded, the same in every place that says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ingest import config
from ingest.files import printable, write_atomically
from ingest.raw_store import RawEntry, RawStore, parse_iso


@dataclass(frozen=True)
class Freshness:
    status: str  # fresh | stale (warn) | stale (error) | never fetched | files only
    age_hours: float | None
    last_good_fetch: str | None
    as_of: str  # "now" or "recording <time>": the clock the age was measured on

    @property
    def line(self) -> str:
        if self.age_hours is None:
            return self.status
        clock = "" if self.as_of == "now" else f" (as of its {self.as_of})"
        return f"{self.status}, last good fetch {self.age_hours:.1f} h ago{clock}"


def last_good_entry(store: RawStore, landed_shas: set[str], source: str) -> RawEntry | None:
    good = [e for e in store.entries(source) if e.sha256 in landed_shas and e.status in (200, 304)]
    return max(good, key=lambda e: e.fetched_at) if good else None


def status_for(src, last_good: str | None, now: datetime) -> tuple[str, float | None]:
    """fresh | stale (warn) | stale (error) | never fetched | files only, and the age in hours."""
    age = (now - parse_iso(last_good)).total_seconds() / 3600 if last_good else None
    if not src.scheduled:
        return "files only", age
    if age is None:
        return "never fetched", None
    if age > src.freshness_error_hours:
        return "stale (error)", age
    if age > src.freshness_warn_hours:
        return "stale (warn)", age
    return "fresh", age


def verdict(src, store: RawStore, lander, now: datetime | None = None) -> Freshness:
    """The verdict for one source as its raw store and landing ledger stand."""
    from ingest.demo import is_recorded, recording_clock

    landed = {o.sha256 for o in lander.outcomes(src.name) if o.status == "landed"}
    entry = last_good_entry(store, landed, src.name)
    clock, as_of = now or datetime.now(timezone.utc), "now"
    if entry is not None and is_recorded(entry):
        recorded = recording_clock(src.name)
        if recorded:
            clock, as_of = parse_iso(recorded), f"recording {recorded}"
    status, age = status_for(src, entry.fetched_at if entry else None, clock)
    return Freshness(status, None if age is None else round(age, 1), entry.fetched_at if entry else None, as_of)


# A source's last failed fetch or landing, kept in the home until it next lands (never in raw/,
# whose every file is a payload): a failed source does not stop the others (orchestration/assets.py),
# so `status` and the manifest say it is stale and why.
FAILURES_FOLDER = "source-failures"


def _failure_path(source: str) -> Path:
    return config.home() / FAILURES_FOLDER / f"{source}.json"


def record_failure(source: str, error: str, now: datetime | None = None) -> None:
    error = printable(error)  # it may quote a server's words: printed and published as they are kept
    at = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_atomically(_failure_path(source), json.dumps({"at": at, "error": error}) + "\n")


def clear_failure(source: str) -> None:
    _failure_path(source).unlink(missing_ok=True)


def last_failure(source: str) -> dict | None:
    """{"at", "error"} of the source's failure since its last landing, or None."""
    try:
        doc = json.loads(_failure_path(source).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and {"at", "error"} <= set(doc) else None

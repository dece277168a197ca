"""Backfills split by day of fetch: the `backfill_landing` job, partitioned by the UTC day a payload
was first fetched, lands each incremental source's (LocalScore, run files) pending payloads of that
day. Partitions are independent, so a Dagster backfill over many days runs them on many workers
(docs/scale-out.md); `benchwh refresh --no-fetch` then builds and publishes. The nightly `refresh`
job is not partitioned and does not change.

Why the ledger stays exact: a day's partition sees only that day's payloads (a body fetched again
later belongs to the day of its first fetch, as `RawStore.payloads` orders them), so two
partitions never land the same payload; incremental sources have no volume rule, so a payload's
verdict does not depend on the others; each payload's ledger entry, quarantine file and landing
rows are its own. A landing of the whole source (the refresh) takes the source's lock exclusively,
partitions take it shared: a refresh never lands a payload a partition is landing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import dagster as dg

from orchestration.progress import landing_log, progress
from ingest import config
from ingest.landing import Lander
from ingest.landing.lock import landing_lock
from ingest.raw_store import RawEntry, RawStore
from ingest.source import Source, SourceFailed, load_sources
from orchestration.steps import die_with_run_process

FETCH_DAYS = dg.DailyPartitionsDefinition(start_date="2023-01-01", end_offset=1)


class FetchDayStore(RawStore):
    """The raw store as one day of fetch sees it: only the payloads first fetched that UTC day."""

    def __init__(self, root: Path, day: str):
        super().__init__(root)
        self.day = day

    def payloads(self, source: str) -> Iterator[RawEntry]:
        for entry in super().payloads(source):
            if entry.fetched_at[:10] == self.day:
                yield entry


def backfill_sources() -> list[Source]:
    """Sources whose payloads land independently of each other (no volume rule): incremental ones."""
    return [s for s in load_sources().values() if s.kind == "incremental"]


def land_fetch_day(source: Source, day: str) -> list:
    """Land the pending payloads `source` first fetched on `day` (YYYY-MM-DD, UTC)."""
    lander = Lander(config.landing_dir(), FetchDayStore(config.raw_dir(), day), log=landing_log)
    with landing_lock(source.name, shared=True):
        return lander.land_pending(source)


def _backfill_op(source: Source) -> dg.OpDefinition:
    @dg.op(name=f"backfill_{source.name}", description=f"Land {source.name}'s payloads first fetched on the partition's day.")
    def _op(context):
        die_with_run_process()
        day = context.partition_key
        try:
            outcomes = land_fetch_day(source, day)
        except SourceFailed as exc:
            raise dg.Failure(description=str(exc)) from None
        rows = sum(sum(o.landed.values()) for o in outcomes)
        progress(f"{source.name} {day}: {len(outcomes)} payloads, {rows} rows landed")
        context.add_output_metadata({"day": day, "payloads": len(outcomes), "rows_landed": rows,
                                     "payloads_rejected": sum(o.status != "landed" for o in outcomes)})

    return _op


def backfill_job() -> dg.JobDefinition:
    ops = [_backfill_op(s) for s in backfill_sources()]

    @dg.job(name="backfill_landing", partitions_def=FETCH_DAYS,
            description="Land incremental sources' stored payloads of one day of fetch (a partition); "
                        "launch a backfill over days, then `benchwh refresh --no-fetch`.")
    def _job():
        for op in ops:
            op()

    return _job

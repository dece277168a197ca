"""Parse stored payloads, validate them and land them as Parquet, a few at a time or in batches.

Layout under warehouse/landing/:
  <source>/<entity>/<raw_sha256>.parquet    valid rows of one raw payload (+ _schema.parquet, empty);
  <source>/<entity>/<sha256>-<n>.parquet    or of a batch of n payloads, the first one named (a backlog)
  _quarantine/<source>/<raw_sha256>.parquet rejected rows with the reason (validate.py)
  <source>/_ledger/                         what became of each payload (ledger.py)
Landing content is a pure function of the raw payload sequence (no wall-clock values), so a
rebuild from raw gives identical rows.

A backlog is cut into segments before parsing (plan_segments); prepare_segment parses and validates
one (in this process, or in a pool's worker above POOL_MIN_PAYLOADS pending payloads), and
Lander._land_prepared writes each of its batches in order: the same files and ledger either way.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from ingest.landing.ledger import Ledger, PayloadOutcome
from ingest.landing.parquet import distinct_values, model_column_types, parquet_columns, write_empty, write_parquet
from ingest.landing.rules import (VOLUME_REFERENCE, VOLUME_REFUSAL_MARK, counts_for_volume, volume_min_share,
                                  volume_override_env, volume_rule_text, volume_short)
from ingest.landing.validate import (QUARANTINE_COLUMNS, quarantine_row, validate_pieces,
                                     validate_records, write_quarantine)
from ingest.raw_store import RawEntry, RawStore, file_sha256, parse_iso
from ingest.source import PayloadRejected, Source, SourceFailed, has_parse_rows

SMALL_LANDING = 16  # up to this many pending payloads land one file each (`<sha256>.parquet`)
BATCH_PAYLOADS = 2000  # a backlog lands in batches of at most this many payloads...
BATCH_ROWS = 200_000  # ...or this many parsed rows, whichever comes first...
BATCH_BYTES = 32 << 20  # ...and a segment (batches planned before parsing) holds at most this many raw bytes
# A process pool parses and validates segments when more payloads than this, or more raw bytes
# (snapshot sources: 700 OpenRouter snapshots are 300 MB), are pending; start-up costs 0.1-1.5 s,
# so a nightly increment or an offline snapshot lands in-process.
POOL_MIN_PAYLOADS = 4000
POOL_MIN_BYTES = 64 << 20
WORKERS_ENV = "BENCHWH_LAND_WORKERS"  # worker processes; 1 = in-process (default: the cores, at most 8)


@dataclass
class _Parsed:
    entry: RawEntry
    fetched_at: Any
    frames: dict[str, pd.DataFrame] | None  # from Source.parse
    rejected: PayloadRejected | None
    records: dict[str, list[dict]] | None = None  # or from Source.parse_rows

    @property
    def rows(self) -> int:
        if self.records is not None:
            return sum(len(r) for r in self.records.values())
        return sum(len(df) for df in self.frames.values()) if self.frames else 0

    @property
    def parsed(self) -> bool:
        return self.rejected is None


@dataclass
class _LandingState:
    recent: list[int]  # rows of each landed snapshot, oldest first (snapshot sources)


@dataclass
class _Batch:
    """A batch on its way to landing: one outcome and one list of quarantine rows per payload."""
    source: Source
    items: list[_Parsed]
    outcomes: list[PayloadOutcome]
    quarantine: list[list[dict]]
    failures: dict[int, str] = field(default_factory=dict)  # position -> schema-level failure
    valid: dict[str, tuple[pd.DataFrame, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def quarantine_row(self, pos: int, entity: str, record_index=None, record=None, column_name=None,
                       check_name="", failure_value=None) -> dict:
        it = self.items[pos]
        return quarantine_row(self.source.name, entity, it.entry, it.fetched_at, record_index, record,
                              column_name, check_name, failure_value)


class Lander:
    def __init__(self, landing_root: Path, store: RawStore, log: Callable[[str], None] = print):
        self.root = Path(landing_root)
        self.store = store
        self.log = log

    # ---- layout -------------------------------------------------------------------------
    def entity_dir(self, source: str, entity: str) -> Path:
        return self.root / source / entity

    def ledger(self, source: str) -> Ledger:
        return Ledger(self.root, source)

    def ledger_dir(self, source: str) -> Path:
        return self.ledger(source).dir

    def quarantine_dir(self, source: str) -> Path:
        return self.root / "_quarantine" / source

    def ensure_layout(self, source: Source) -> None:
        """Empty typed files so dbt can read every entity before its first payload lands."""
        self.store.ensure_source(source.name)
        for ent in source.entities:
            types = model_column_types(ent.model)
            path = self.entity_dir(source.name, ent.name) / "_schema.parquet"
            # rewritten when the model gained a column, so dbt reads older files' rows as null there
            if not path.exists() or parquet_columns(path) != list(types):
                write_empty(path, types)
        qpath = self.root / "_quarantine" / "_schema.parquet"
        if not qpath.exists():
            write_empty(qpath, QUARANTINE_COLUMNS)

    # ---- ledger -------------------------------------------------------------------------
    def outcomes(self, source: str) -> list[PayloadOutcome]:
        """Every ledgered payload, oldest first."""
        return self.ledger(source).outcomes()

    def pending(self, source: str) -> list[RawEntry]:
        done = self.ledger(source).shas()
        return [e for e in self.store.payloads(source) if e.sha256 not in done]

    # ---- landing ------------------------------------------------------------------------
    def land_pending(self, source: Source, *, workers: int | None = None,
                     pool_min: int | None = None) -> list[PayloadOutcome]:
        """Parse, validate and land every stored payload not landed yet, oldest first.

        A few pending payloads land one Parquet file each (`<sha256>.parquet`). A backlog (a
        backfill, a rebuild from raw, a thousand files added at once) lands in batches: one
        pandera validation and one Parquet file per entity per batch (`<first sha256>-<n>.parquet`),
        since validation and a file write cost ~0.1-0.3 s each however few rows they hold. The
        ledger stays one entry per payload, and so do quarantine files.

        Batches are planned as segments before parsing (plan_segments), so segments can be parsed
        and validated by a process pool (`workers`, env BENCHWH_LAND_WORKERS; used above `pool_min`
        pending payloads, by default POOL_MIN_PAYLOADS or POOL_MIN_BYTES of raw) while this process writes files and the ledger in order: the files and
        the ledger are the same whatever the number of workers.
        """
        self.ensure_layout(source)
        pending = self.pending(source.name)
        if pending and self._drop_unfinished_batches(source, {e.sha256 for e in pending}):
            pending = self.pending(source.name)
        segments = plan_segments(pending)
        state = _LandingState(recent=self._landed_totals(source))
        outcomes: list[PayloadOutcome] = []
        done_payloads = 0
        # closing: a failure stops the pool's workers now, not when the traceback is freed
        with contextlib.closing(self._prepared(source, segments, len(pending), workers, pool_min)) as prepared:
            for batches, error in prepared:
                for batch in batches:
                    done = self._land_prepared(source, batch, state)
                    outcomes.extend(done)
                    done_payloads += len(done)
                    if done and done[-1].status == "failed":
                        raise SourceFailed(f"{source.name}: {done[-1].reason}")
                    if len(pending) > 20:
                        self.log(f"  {source.name}: landed {done_payloads}/{len(pending)} payloads")
                if error is not None:
                    raise error
        source.validate_payloads(outcomes)
        return outcomes

    def _prepared(self, source: Source, segments: list[list[RawEntry]], pending: int, workers: int | None,
                  pool_min: int | None) -> Iterator[tuple[list["_Batch"], SourceFailed | None]]:
        """Each segment's batches, parsed and validated, in order: in-process or by a pool."""
        workers = land_workers() if workers is None else max(1, int(workers))
        big = (pending > pool_min if pool_min is not None else
               pending > POOL_MIN_PAYLOADS or sum(e.bytes for seg in segments for e in seg) > POOL_MIN_BYTES)
        if workers > 1 and len(segments) > 1 and big:
            yield from _pooled(source, self.store.root, segments, workers)
            return
        for seg in segments:
            yield prepare_segment(source, self.store, seg)

    def _drop_unfinished_batches(self, source: Source, pending: set[str]) -> bool:
        """Undo a batch a crash left between its Parquet files and its ledger entries.

        Ledger entries of a batch are written last payload first, so a batch whose first payload
        is still pending is unfinished: its files go, and so do the ledger entries of every payload
        in them, which then land again. (A single payload's file is named by its hash and simply
        rewritten.) Without this, rows of such a batch would land twice.
        """
        dropped = False
        ledger = self.ledger(source.name)
        for ent in source.entities:
            folder = self.entity_dir(source.name, ent.name)
            for path in folder.glob("*-*.parquet"):
                if path.stem.split("-", 1)[0] not in pending:
                    continue
                for sha in distinct_values(path, "_raw_sha256"):
                    ledger.forget(sha)
                path.unlink()
                self.log(f"  {source.name}: removed {path.name}, a batch a crash left unfinished")
                dropped = True
        return dropped

    def land_payload(self, source: Source, entry: RawEntry) -> PayloadOutcome:
        """Land one payload (whatever its status; a failed payload does not raise here)."""
        state = _LandingState(recent=self._landed_totals(source))
        [outcome] = self._land_prepared(source, prepare_batch(source, [parse_payload(source, self.store, entry)]), state)
        return outcome

    def _landed_totals(self, source: Source) -> list[int]:
        if source.kind != "snapshot":
            return []
        return [sum(o.landed.values()) for o in self.outcomes(source.name) if counts_for_volume(o)]

    def _land_prepared(self, source: Source, batch: "_Batch", state: _LandingState) -> list[PayloadOutcome]:
        """Write, quarantine and ledger a batch prepared by prepare_batch(), in order.

        Stops at the first failed payload: it is ledgered as failed, later ones stay pending.
        """
        batch.source = source
        committed = self._verdicts(batch, state)
        self._write_entities(batch, committed)
        self._commit(batch, committed)
        return batch.outcomes[:committed]

    def _verdicts(self, batch: _Batch, state: _LandingState) -> int:
        """Each payload's verdict in order; a failed payload ends the batch. Returns how many payloads
        the batch commits (the failed one included)."""
        for pos, outcome in enumerate(batch.outcomes):
            if outcome.status == "rejected":
                continue
            if pos in batch.failures:
                outcome.status, outcome.reason = "failed", batch.failures[pos]
            else:
                outcome.status, outcome.reason = self._volume_verdict(batch.source, outcome, state)
            if outcome.status == "failed":
                batch.quarantine[pos] = [batch.quarantine_row(pos, "", check_name="payload_failed",
                                                              failure_value=outcome.reason)]
                return pos + 1
            if batch.source.kind == "snapshot":
                state.recent.append(sum(outcome.landed.values()))
        return len(batch.items)

    def _write_entities(self, batch: _Batch, committed: int) -> None:
        """One Parquet file per entity with the valid rows of the batch's landed payloads."""
        items, source = batch.items, batch.source
        landed = np.array([o.status == "landed" for o in batch.outcomes[:committed]]
                          + [False] * (len(items) - committed))
        shas = np.array([it.entry.sha256 for it in items], dtype=object)
        times = np.array([np.datetime64(it.fetched_at, "us") for it in items])
        name = items[0].entry.sha256 if len(items) == 1 else f"{items[0].entry.sha256}-{len(items)}"
        for ent in source.entities:
            valid, vpos, vrec = batch.valid[ent.name]
            if valid.empty:
                continue
            keep = landed[vpos]
            if not keep.any():
                continue
            df = valid[keep].copy() if not keep.all() else valid.copy()
            kpos = vpos[keep]
            df["_raw_sha256"] = shas[kpos]
            df["_fetched_at"] = times[kpos]
            df["_record_index"] = vrec[keep].astype("int64")
            path = self.entity_dir(source.name, ent.name) / f"{name}.parquet"
            write_parquet(df, path, model_column_types(ent.model))
            # the batch's files are listed in its first payload's ledger entry (they carry its name)
            batch.outcomes[0].files[f"{source.name}/{ent.name}/{path.name}"] = file_sha256(path)

    def _commit(self, batch: _Batch, committed: int) -> None:
        """Quarantine files, then ledger entries (the ledger last: a crash before it lands the batch again)."""
        for pos in reversed(range(committed)):
            entry = batch.items[pos].entry
            write_quarantine(self.quarantine_dir(batch.source.name) / f"{entry.sha256}.parquet",
                             batch.quarantine[pos])
        self.ledger(batch.source.name).record(batch.outcomes[:committed])

    @staticmethod
    def _volume_verdict(source: Source, outcome: PayloadOutcome, state: _LandingState) -> tuple[str, str | None]:
        total = sum(outcome.landed.values())
        if total == 0:
            return "failed", f"payload {outcome.sha256[:12]} from {outcome.url} has zero valid rows"
        if source.kind != "snapshot":
            return "landed", None
        short, reference = volume_short(source, total, state.recent)
        if short:
            return "failed", (f"payload {outcome.sha256[:12]} has {total} {VOLUME_REFUSAL_MARK} "
                              f"{volume_rule_text(volume_min_share(source))} "
                              f"of the last good landings' median ({reference}); if upstream really shrank, "
                              f"set {volume_override_env(source)}=0 for a run (or a lower share), "
                              f"or wait: refused snapshots count toward the median, so this size lands "
                              f"once it is most of the last {VOLUME_REFERENCE}")
        return "landed", None


# ---- planning, parsing and validating (in this process or in a pool's worker) ---------------------

def land_workers() -> int:
    """Worker processes for a backlog: env BENCHWH_LAND_WORKERS, else the usable cores (at most 8)."""
    value = os.environ.get(WORKERS_ENV)
    if value not in (None, ""):
        return max(1, int(value))
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def plan_segments(pending: list[RawEntry]) -> list[list[RawEntry]]:
    """Pending payloads in order, cut into segments before parsing: one payload each for a small
    landing, else at most BATCH_PAYLOADS payloads and BATCH_BYTES raw bytes (a segment's batches
    are then cut at BATCH_ROWS parsed rows, prepare_segment). Known before parsing, so segments
    can be prepared in any order and by any process."""
    if len(pending) <= SMALL_LANDING:
        return [[e] for e in pending]
    segments, seg, size = [], [], 0
    for entry in pending:
        if seg and (len(seg) >= BATCH_PAYLOADS or size + entry.bytes > BATCH_BYTES):
            segments.append(seg)
            seg, size = [], 0
        seg.append(entry)
        size += entry.bytes
    if seg:
        segments.append(seg)
    return segments


def parse_payload(source: Source, store: RawStore, entry: RawEntry) -> _Parsed:
    """One payload through its source's parser (parse_rows where the source has it)."""
    fetched_at = parse_iso(entry.fetched_at).replace(tzinfo=None)
    rows_api = has_parse_rows(source)
    try:
        body = store.read(entry)
        parsed = source.parse_rows(body, entry) if rows_api else source.parse(body, entry)
    except PayloadRejected as exc:
        return _Parsed(entry, fetched_at, None, exc)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        # a parser that tripped over this payload: name the file, so the reader can open it
        detail = " ".join(str(exc).split())[:200]
        raise SourceFailed(f"{source.name}: parsing raw/{entry.path} failed: {type(exc).__name__}: {detail}") from None
    if rows_api:
        return _Parsed(entry, fetched_at, None, None, {ent.name: list(parsed.get(ent.name) or ())
                                                       for ent in source.entities})
    out = {}
    for ent in source.entities:
        df = parsed.get(ent.name)
        out[ent.name] = _EMPTY if df is None else df.reset_index(drop=True)
    return _Parsed(entry, fetched_at, out, None)


_EMPTY = pd.DataFrame()  # never modified: only its length is read


def prepare_segment(source: Source, store: RawStore, entries: list[RawEntry],
                    batch_rows: int | None = None) -> tuple[list[_Batch], SourceFailed | None]:
    """Parse and validate a segment: its batches (cut at BATCH_ROWS parsed rows) ready for
    Lander._land_prepared, and the error that stopped it (the batches before it still land)."""
    batch_rows = BATCH_ROWS if batch_rows is None else batch_rows
    batches: list[_Batch] = []
    items: list[_Parsed] = []
    rows = 0
    try:
        for i, entry in enumerate(entries, 1):
            item = parse_payload(source, store, entry)
            items.append(item)
            rows += item.rows
            if rows >= batch_rows or i == len(entries):
                batches.append(prepare_batch(source, items))
                items, rows = [], 0
    except SourceFailed as exc:
        return batches, exc
    return batches, None


def prepare_batch(source: Source, items: list[_Parsed]) -> _Batch:
    """Validate a batch of parsed payloads together (one pandera validation per entity): the
    per-payload counts, quarantine rows and valid rows; Lander._land_prepared writes them."""
    batch = _Batch(source, items,
                   outcomes=[PayloadOutcome(sha256=it.entry.sha256, fetched_at=it.entry.fetched_at,
                                            url=it.entry.url, status="landed") for it in items],
                   quarantine=[[] for _ in items])
    _reject_unparsed(batch)
    for ent in source.entities:
        _validate_entity(batch, ent)
    for it in items:  # the parsed rows are in batch.valid now; not carried back from a worker
        it.frames = it.records = None
    return batch


def _reject_unparsed(batch: _Batch) -> None:
    """Payloads their parser refused: rejected, quarantined with the parser's reason."""
    for pos, it in enumerate(batch.items):
        if it.rejected is not None:
            exc = it.rejected
            batch.outcomes[pos].status, batch.outcomes[pos].reason = "rejected", exc.reason
            batch.quarantine[pos].append(batch.quarantine_row(pos, "", check_name=exc.check,
                                                              failure_value=exc.reason))


def _validate_entity(batch: _Batch, ent) -> None:
    """Validate one entity's frames of the batch's payloads; count and quarantine per payload."""
    outcomes, n = batch.outcomes, len(batch.items)
    pieces = []
    for pos, it in enumerate(batch.items):
        if not it.parsed:
            continue
        part = it.records[ent.name] if it.records is not None else it.frames[ent.name]
        outcomes[pos].parsed[ent.name] = len(part)
        outcomes[pos].landed[ent.name] = 0
        outcomes[pos].quarantined[ent.name] = 0
        if len(part):
            pieces.append((pos, part))
    if any(isinstance(part, list) for _, part in pieces):
        valid, vpos, vrec, qrows, failed = validate_records(pieces, ent.model)
    else:
        valid, vpos, vrec, qrows, failed = validate_pieces(pieces, ent.model)
    for pos, reason in failed.items():
        batch.failures.setdefault(pos, reason)
    counts = np.bincount(vpos, minlength=n) if len(vpos) else np.zeros(n, int)
    qdistinct: dict[int, set] = {}
    for pos, row in qrows:
        batch.quarantine[pos].append(batch.quarantine_row(pos, ent.name, **row))
        qdistinct.setdefault(pos, set()).add(row["record_index"])
    for pos, _part in pieces:
        if pos not in failed:
            outcomes[pos].landed[ent.name] = int(counts[pos])
            outcomes[pos].quarantined[ent.name] = len(qdistinct.get(pos, ()))
    batch.valid[ent.name] = (valid, vpos, vrec)


# ---- the pool ------------------------------------------------------------------------------------

def _prepare_in_worker(source: Source, raw_root: Path, entries: list[RawEntry], batch_rows: int):
    return prepare_segment(source, RawStore(raw_root), entries, batch_rows)


def _pooled(source: Source, raw_root: Path, segments: list[list[RawEntry]],
            workers: int) -> Iterator[tuple[list[_Batch], SourceFailed | None]]:
    """Segments prepared by worker processes, yielded in order; a few submitted ahead (bounded,
    so memory stays that of a few segments). Workers are forked (no imports to repeat: ~1.5 s,
    far more on a busy machine) unless other Python threads run here (Dagster): a forked copy of
    a lock they hold can hang, so then a forkserver starts them."""
    if threading.active_count() == 1:
        ctx = multiprocessing.get_context("fork")
    else:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["ingest.landing.lander", type(source).__module__])
    pool = ProcessPoolExecutor(max_workers=min(workers, len(segments)), mp_context=ctx)
    try:
        queue: deque = deque()
        todo = iter(segments)
        for seg in todo:
            queue.append(pool.submit(_prepare_in_worker, source, raw_root, seg, BATCH_ROWS))
            if len(queue) >= 2 * workers:
                break
        while queue:
            result = queue.popleft().result()
            seg = next(todo, None)
            if seg is not None:
                queue.append(pool.submit(_prepare_in_worker, source, raw_root, seg, BATCH_ROWS))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

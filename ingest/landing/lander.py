"""Parse stored payloads, validate them and land them as Parquet, a few at a time or in batches.

Layout under warehouse/landing/:
  <source>/<entity>/<raw_sha256>.parquet    valid rows of one raw payload (+ _schema.parquet, empty);
  <source>/<entity>/<sha256>-<n>.parquet    or of a batch of n payloads, the first one named (a backlog)
  _quarantine/<source>/<raw_sha256>.parquet rejected rows with the reason (validate.py)
  <source>/_ledger/                         what became of each payload (ledger.py)
Landing content is a pure function of the raw payload sequence (no wall-clock values), so a
rebuild from raw gives identical rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ingest.landing.ledger import Ledger, PayloadOutcome
from ingest.landing.parquet import distinct_values, model_column_types, parquet_columns, write_empty, write_parquet
from ingest.landing.rules import volume_min_share, volume_rule_text, volume_short
from ingest.landing.validate import QUARANTINE_COLUMNS, quarantine_row, validate_pieces, write_quarantine
from ingest.raw_store import RawEntry, RawStore, file_sha256, parse_iso
from ingest.source import PayloadRejected, Source, SourceFailed

SMALL_LANDING = 16  # up to this many pending payloads land one file each (`<sha256>.parquet`)
BATCH_PAYLOADS = 2000  # a backlog lands in batches of at most this many payloads...
BATCH_ROWS = 200_000  # ...or this many parsed rows, whichever comes first


@dataclass
class _Parsed:
    entry: RawEntry
    fetched_at: Any
    frames: dict[str, pd.DataFrame] | None
    rejected: PayloadRejected | None

    @property
    def rows(self) -> int:
        return sum(len(df) for df in self.frames.values()) if self.frames else 0


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
    def land_pending(self, source: Source) -> list[PayloadOutcome]:
        """Parse, validate and land every stored payload not landed yet, oldest first.

        A few pending payloads land one Parquet file each (`<sha256>.parquet`). A backlog (a
        backfill, a rebuild from raw, a thousand files added at once) lands in batches: one
        pandera validation and one Parquet file per entity per batch (`<first sha256>-<n>.parquet`),
        since validation and a file write cost ~0.1-0.3 s each however few rows they hold. The
        ledger stays one entry per payload, and so do quarantine files.
        """
        self.ensure_layout(source)
        pending = self.pending(source.name)
        if pending and self._drop_unfinished_batches(source, {e.sha256 for e in pending}):
            pending = self.pending(source.name)
        per_batch = 1 if len(pending) <= SMALL_LANDING else BATCH_PAYLOADS
        state = _LandingState(recent=self._landed_totals(source))
        outcomes: list[PayloadOutcome] = []
        batch: list[_Parsed] = []
        rows = 0
        for i, entry in enumerate(pending, 1):
            item = self._parse(source, entry)
            batch.append(item)
            rows += item.rows
            if len(batch) >= per_batch or rows >= BATCH_ROWS or i == len(pending):
                done = self._land_batch(source, batch, state)
                outcomes.extend(done)
                batch, rows = [], 0
                if done and done[-1].status == "failed":
                    raise SourceFailed(f"{source.name}: {done[-1].reason}")
                if len(pending) > 20:
                    self.log(f"  {source.name}: landed {i}/{len(pending)} payloads")
        source.validate_payloads(outcomes)
        return outcomes

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
        [outcome] = self._land_batch(source, [self._parse(source, entry)], state)
        return outcome

    def _parse(self, source: Source, entry: RawEntry) -> _Parsed:
        fetched_at = parse_iso(entry.fetched_at).replace(tzinfo=None)
        try:
            frames = source.parse(self.store.read(entry), entry)
        except PayloadRejected as exc:
            return _Parsed(entry, fetched_at, None, exc)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            # a parser that tripped over this payload: name the file, so the reader can open it
            detail = " ".join(str(exc).split())[:200]
            raise SourceFailed(f"{source.name}: parsing raw/{entry.path} failed: {type(exc).__name__}: {detail}") from None
        out = {}
        for ent in source.entities:
            df = frames.get(ent.name)
            out[ent.name] = pd.DataFrame() if df is None else df.reset_index(drop=True)
        return _Parsed(entry, fetched_at, out, None)

    def _landed_totals(self, source: Source) -> list[int]:
        if source.kind != "snapshot":
            return []
        return [sum(o.landed.values()) for o in self.outcomes(source.name) if o.status == "landed"]

    def _land_batch(self, source: Source, items: list[_Parsed], state: _LandingState) -> list[PayloadOutcome]:
        """Validate a batch of parsed payloads together; write, quarantine and ledger them in order.

        Stops at the first failed payload: it is ledgered as failed, later ones stay pending.
        """
        batch = _Batch(source, items,
                       outcomes=[PayloadOutcome(sha256=it.entry.sha256, fetched_at=it.entry.fetched_at,
                                                url=it.entry.url, status="landed") for it in items],
                       quarantine=[[] for _ in items])
        self._reject_unparsed(batch)
        for ent in source.entities:
            self._validate_entity(batch, ent)
        committed = self._verdicts(batch, state)
        self._write_entities(batch, committed)
        self._commit(batch, committed)
        return batch.outcomes[:committed]

    @staticmethod
    def _reject_unparsed(batch: _Batch) -> None:
        """Payloads their parser refused: rejected, quarantined with the parser's reason."""
        for pos, it in enumerate(batch.items):
            if it.rejected is not None:
                exc = it.rejected
                batch.outcomes[pos].status, batch.outcomes[pos].reason = "rejected", exc.reason
                batch.quarantine[pos].append(batch.quarantine_row(pos, "", check_name=exc.check,
                                                                  failure_value=exc.reason))

    @staticmethod
    def _validate_entity(batch: _Batch, ent) -> None:
        """Validate one entity's frames of the batch's payloads; count and quarantine per payload."""
        outcomes, n = batch.outcomes, len(batch.items)
        pieces = []
        for pos, it in enumerate(batch.items):
            if it.frames is None:
                continue
            df = it.frames[ent.name]
            outcomes[pos].parsed[ent.name] = len(df)
            outcomes[pos].landed[ent.name] = 0
            outcomes[pos].quarantined[ent.name] = 0
            if not df.empty:
                pieces.append((pos, df))
        valid, vpos, vrec, qrows, failed = validate_pieces(pieces, ent.model)
        for pos, reason in failed.items():
            batch.failures.setdefault(pos, reason)
        counts = np.bincount(vpos, minlength=n) if len(vpos) else np.zeros(n, int)
        qdistinct: dict[int, set] = {}
        for pos, row in qrows:
            batch.quarantine[pos].append(batch.quarantine_row(pos, ent.name, **row))
            qdistinct.setdefault(pos, set()).add(row["record_index"])
        for pos, _df in pieces:
            if pos not in failed:
                outcomes[pos].landed[ent.name] = int(counts[pos])
                outcomes[pos].quarantined[ent.name] = len(qdistinct.get(pos, ()))
        batch.valid[ent.name] = (valid, vpos, vrec)

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
            return "failed", (f"payload {outcome.sha256[:12]} has {total} valid rows, fewer than "
                              f"{volume_rule_text(volume_min_share(source))} "
                              f"of the last good landings' median ({reference})")
        return "landed", None

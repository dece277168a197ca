"""Validate parsed payloads with pandera and land them as Parquet; failing rows to quarantine.

Layout under warehouse/landing/:
  <source>/<entity>/<raw_sha256>.parquet    valid rows of one raw payload (+ _schema.parquet, empty);
  <source>/<entity>/<sha256>-<n>.parquet    or of a batch of n payloads, the first one named (a backlog)
  _quarantine/<source>/<raw_sha256>.parquet rejected rows with the reason (+ _schema.parquet)
  <source>/_ledger/<raw_sha256>.json        what became of each payload; a payload with no ledger
                                            entry is pending, so deleting landing/ replays raw/.
  <source>/_ledger/_outcomes.jsonl          the same entries in one file, for reading them fast
Landing content is a pure function of the raw payload sequence (no wall-clock values), so a
rebuild from raw gives identical rows.
"""
from __future__ import annotations

import copy
import json
import math
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import duckdb
import numpy as np
import pandas as pd
import pandera.errors

from ingest.raw_store import RawEntry, RawStore, file_sha256, parse_iso
from ingest.source import PayloadRejected, Source, SourceFailed

QUARANTINE_COLUMNS = {
    "source": "VARCHAR",
    "entity": "VARCHAR",
    "raw_sha256": "VARCHAR",
    "record_index": "BIGINT",
    "record": "VARCHAR",
    "column_name": "VARCHAR",
    "check_name": "VARCHAR",
    "failure_value": "VARCHAR",
    "quarantined_at": "TIMESTAMP",
}
LEDGER_LOG = "_outcomes.jsonl"  # the ledger files repeated in one file (read fast; see outcomes())
SMALL_LANDING = 16  # up to this many pending payloads land one file each (`<sha256>.parquet`)
BATCH_PAYLOADS = 2000  # a backlog lands in batches of at most this many payloads...
BATCH_ROWS = 200_000  # ...or this many parsed rows, whichever comes first
META_COLUMNS = {"_raw_sha256": "VARCHAR", "_fetched_at": "TIMESTAMP", "_record_index": "BIGINT"}
# The volume rule (snapshot sources): a new snapshot needs at least `volume_min_share` (default
# half) of a robust reference, the median (low) of the last VOLUME_REFERENCE good landings, so
# one outlier snapshot (100,000 models once) cannot block a source for good.
VOLUME_REFERENCE = 5


def volume_reference(totals: list[int]) -> int | None:
    """The reference a new snapshot is compared with: median_low of the last good landings."""
    import statistics

    recent = totals[-VOLUME_REFERENCE:]
    return statistics.median_low(recent) if recent else None


def volume_min_share(source: Source) -> float:
    """The source's share (Source.volume_min_share), overridden by env BENCHWH_<NAME>_VOLUME_MIN_SHARE
    (0 turns the rule off for that source)."""
    value = os.environ.get(f"BENCHWH_{source.name.upper()}_VOLUME_MIN_SHARE")
    return float(value) if value not in (None, "") else float(getattr(source, "volume_min_share", 0.5))


@dataclass
class PayloadOutcome:
    sha256: str
    fetched_at: str
    url: str
    status: str  # landed | rejected | failed
    reason: str | None = None
    parsed: dict[str, int] = field(default_factory=dict)
    landed: dict[str, int] = field(default_factory=dict)
    quarantined: dict[str, int] = field(default_factory=dict)  # distinct records per entity
    # landing files this payload's rows went to -> their sha256, checked before a build reads them
    files: dict[str, str] = field(default_factory=dict)


def write_parquet(df: pd.DataFrame, path: Path, column_types: dict[str, str] | None = None) -> None:
    """Write a frame with DuckDB (no pyarrow), atomically, optionally casting columns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    con = duckdb.connect()
    try:
        con.register("frame", df)
        if column_types:
            select = ", ".join(
                f'CAST("{c}" AS {column_types[c]}) AS "{c}"' if c in column_types else f'"{c}"'
                for c in df.columns
            )
        else:
            select = "*"
        target = str(tmp).replace("'", "''")
        con.execute(f"COPY (SELECT {select} FROM frame) TO '{target}' (FORMAT parquet, COMPRESSION zstd)")
    finally:
        con.close()
    os.replace(tmp, path)


def _duck_type(dtype: Any) -> str:
    text = str(dtype).lower()
    if "datetime" in text or "timestamp" in text:
        return "TIMESTAMP"
    if text.startswith(("int", "uint")):
        return "BIGINT"
    if text.startswith("float"):
        return "DOUBLE"
    if text.startswith("bool"):
        return "BOOLEAN"
    return "VARCHAR"


def model_column_types(model: Any) -> dict[str, str]:
    schema = model.to_schema()
    types = {name: _duck_type(col.dtype) for name, col in schema.columns.items()}
    types.update(META_COLUMNS)
    return types


def _json_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    if isinstance(value, (pd.Timestamp,)):
        return value.isoformat()
    if hasattr(value, "item"):
        try:
            return _json_value(value.item())
        except (ValueError, AttributeError):
            pass
    if isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def record_json(row: pd.Series) -> str:
    return json.dumps({str(k): _json_value(v) for k, v in row.items()}, sort_keys=True)


def _parquet_columns(path: Path) -> list[str]:
    con = duckdb.connect()
    try:
        return [r[0] for r in con.execute("select name from parquet_schema(?) where num_children is null",
                                          [str(path)]).fetchall()]
    finally:
        con.close()


class Lander:
    def __init__(self, landing_root: Path, store: RawStore, log: Callable[[str], None] = print):
        self.root = Path(landing_root)
        self.store = store
        self.log = log

    # ---- layout -------------------------------------------------------------------------
    def entity_dir(self, source: str, entity: str) -> Path:
        return self.root / source / entity

    def ledger_dir(self, source: str) -> Path:
        return self.root / source / "_ledger"

    def quarantine_dir(self, source: str) -> Path:
        return self.root / "_quarantine" / source

    def ensure_layout(self, source: Source) -> None:
        """Empty typed files so dbt can read every entity before its first payload lands."""
        self.store.ensure_source(source.name)
        for ent in source.entities:
            types = model_column_types(ent.model)
            path = self.entity_dir(source.name, ent.name) / "_schema.parquet"
            # rewritten when the model gained a column, so dbt reads older files' rows as null there
            if not path.exists() or _parquet_columns(path) != list(types):
                write_parquet(pd.DataFrame({c: pd.Series(dtype="object") for c in types}), path, types)
        qpath = self.root / "_quarantine" / "_schema.parquet"
        if not qpath.exists():
            write_parquet(pd.DataFrame({c: pd.Series(dtype="object") for c in QUARANTINE_COLUMNS}),
                          qpath, QUARANTINE_COLUMNS)

    # ---- ledger -------------------------------------------------------------------------
    def outcomes(self, source: str) -> list[PayloadOutcome]:
        """Every ledgered payload, oldest first.

        The `<sha256>.json` files are the ledger; `_outcomes.jsonl` repeats them in one file so a
        warehouse of 100,000 payloads is read in a second rather than 100,000 file opens (~20 s).
        A ledger file the log lacks (an older landing, an interrupted write) is read itself and
        then added to the log; log lines without a ledger file are ignored.
        """
        folder = self.ledger_dir(source)
        if not folder.exists():
            return []
        names = {p.name[:-5] for p in os.scandir(folder) if p.name.endswith(".json") and not p.name.startswith(".")}
        found: dict[str, dict] = {}
        log = folder / LEDGER_LOG
        if log.exists():
            with log.open(encoding="utf-8") as fh:
                for line in fh:
                    try:
                        doc = json.loads(line)
                    except ValueError:
                        continue  # a torn last line
                    if doc.get("sha256") in names:
                        found[doc["sha256"]] = doc
        missing = names - found.keys()
        for sha in missing:
            found[sha] = json.loads((folder / f"{sha}.json").read_text())
        if missing:
            self._append_log(folder, [found[sha] for sha in sorted(missing)])
        out = [PayloadOutcome(**doc) for doc in found.values()]
        return sorted(out, key=lambda o: (o.fetched_at, o.sha256))

    @staticmethod
    def _append_log(folder: Path, docs: list[dict]) -> None:
        if docs:
            with (folder / LEDGER_LOG).open("a", encoding="utf-8") as fh:
                fh.write("".join(json.dumps(d, sort_keys=True) + "\n" for d in docs))

    def pending(self, source: str) -> list[RawEntry]:
        folder = self.ledger_dir(source)
        done = ({p.name[:-5] for p in os.scandir(folder) if p.name.endswith(".json") and not p.name.startswith(".")}
                if folder.exists() else set())
        return [e for e in self.store.payloads(source) if e.sha256 not in done]

    def _record(self, source: str, outcome: PayloadOutcome) -> None:
        folder = self.ledger_dir(source)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{outcome.sha256}.tmp"
        tmp.write_text(json.dumps(asdict(outcome), sort_keys=True))
        os.replace(tmp, folder / f"{outcome.sha256}.json")

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
        for ent in source.entities:
            folder = self.entity_dir(source.name, ent.name)
            for path in folder.glob("*-*.parquet"):
                if path.stem.split("-", 1)[0] not in pending:
                    continue
                con = duckdb.connect()
                try:
                    shas = [r[0] for r in con.execute(
                        "SELECT DISTINCT _raw_sha256 FROM read_parquet(?)", [str(path)]).fetchall()]
                finally:
                    con.close()
                for sha in shas:
                    (self.ledger_dir(source.name) / f"{sha}.json").unlink(missing_ok=True)
                path.unlink()
                self.log(f"  {source.name}: removed {path.name}, a batch a crash left unfinished")
                dropped = True
        return dropped

    def land_payload(self, source: Source, entry: RawEntry) -> PayloadOutcome:
        """Land one payload (whatever its status; a failed payload does not raise here)."""
        state = _LandingState(recent=self._landed_totals(source))
        [outcome] = self._land_batch(source, [self._parse(source, entry)], state)
        return outcome

    def _parse(self, source: Source, entry: RawEntry) -> "_Parsed":
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

    def _land_batch(self, source: Source, items: list["_Parsed"], state: "_LandingState") -> list[PayloadOutcome]:
        """Validate a batch of parsed payloads together; write, quarantine and ledger them in order.

        Stops at the first failed payload: it is ledgered as failed, later ones stay pending.
        """
        outcomes = [PayloadOutcome(sha256=it.entry.sha256, fetched_at=it.entry.fetched_at, url=it.entry.url,
                                   status="landed") for it in items]
        quarantine: list[list[dict]] = [[] for _ in items]
        failures: dict[int, str] = {}
        valid_by_entity: dict[str, tuple[pd.DataFrame, np.ndarray, np.ndarray]] = {}
        for pos, it in enumerate(items):
            if it.rejected is not None:
                exc = it.rejected
                outcomes[pos].status, outcomes[pos].reason = "rejected", exc.reason
                quarantine[pos].append(self._quarantine_row(source.name, "", it.entry, it.fetched_at, None, None,
                                                            None, exc.check, exc.reason))
        for ent in source.entities:
            pieces = []
            for pos, it in enumerate(items):
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
                failures.setdefault(pos, reason)
            counts = np.bincount(vpos, minlength=len(items)) if len(vpos) else np.zeros(len(items), int)
            qdistinct: dict[int, set] = {}
            for pos, row in qrows:
                quarantine[pos].append(self._quarantine_row(source.name, ent.name, items[pos].entry,
                                                            items[pos].fetched_at, **row))
                qdistinct.setdefault(pos, set()).add(row["record_index"])
            for pos, _df in pieces:
                if pos not in failed:
                    outcomes[pos].landed[ent.name] = int(counts[pos])
                    outcomes[pos].quarantined[ent.name] = len(qdistinct.get(pos, ()))
            valid_by_entity[ent.name] = (valid, vpos, vrec)

        # verdicts in payload order; a failed payload ends the batch
        committed = len(items)
        for pos, outcome in enumerate(outcomes):
            if outcome.status == "rejected":
                continue
            if pos in failures:
                outcome.status, outcome.reason = "failed", failures[pos]
            else:
                outcome.status, outcome.reason = self._volume_verdict(source, outcome, state)
            if outcome.status == "failed":
                quarantine[pos] = [self._quarantine_row(source.name, "", items[pos].entry, items[pos].fetched_at,
                                                        None, None, None, "payload_failed", outcome.reason)]
                committed = pos + 1
                break
            if source.kind == "snapshot":
                state.recent.append(sum(outcome.landed.values()))

        landed = np.array([o.status == "landed" for o in outcomes[:committed]] + [False] * (len(items) - committed))
        shas = np.array([it.entry.sha256 for it in items], dtype=object)
        times = np.array([np.datetime64(it.fetched_at, "us") for it in items])
        name = items[0].entry.sha256 if len(items) == 1 else f"{items[0].entry.sha256}-{len(items)}"
        for ent in source.entities:
            valid, vpos, vrec = valid_by_entity[ent.name]
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
            outcomes[0].files[f"{source.name}/{ent.name}/{path.name}"] = file_sha256(path)
        # last payload first: while the first one is unrecorded, the batch counts as unfinished
        for pos in reversed(range(committed)):
            self._write_quarantine(source.name, items[pos].entry, quarantine[pos])
            self._record(source.name, outcomes[pos])
        self._append_log(self.ledger_dir(source.name), [asdict(o) for o in outcomes[:committed]])
        return outcomes[:committed]

    def _volume_verdict(self, source: Source, outcome: PayloadOutcome,
                        state: "_LandingState") -> tuple[str, str | None]:
        total = sum(outcome.landed.values())
        if total == 0:
            return "failed", f"payload {outcome.sha256[:12]} from {outcome.url} has zero valid rows"
        if source.kind != "snapshot":
            return "landed", None
        reference = volume_reference(state.recent)
        share = volume_min_share(source)
        if reference is not None and total < share * reference:
            part = "half" if share == 0.5 else f"{share:g} times"
            return "failed", (f"payload {outcome.sha256[:12]} has {total} valid rows, fewer than {part} "
                              f"of the last good landings' median ({reference})")
        return "landed", None

    def _quarantine_row(self, source, entity, entry, fetched_at, record_index, record, column_name,
                        check_name, failure_value) -> dict:
        return {
            "source": source, "entity": entity, "raw_sha256": entry.sha256,
            "record_index": record_index, "record": record, "column_name": column_name,
            "check_name": check_name, "failure_value": None if failure_value is None else str(failure_value),
            "quarantined_at": fetched_at,
        }

    def _write_quarantine(self, source: str, entry: RawEntry, rows: list[dict]) -> None:
        path = self.quarantine_dir(source) / f"{entry.sha256}.parquet"
        if rows:
            write_parquet(pd.DataFrame(rows, columns=list(QUARANTINE_COLUMNS)), path, QUARANTINE_COLUMNS)
        elif path.exists():
            path.unlink()


class SchemaLevelError(Exception):
    """A failure that is not about single rows: a missing column, an uncoercible column."""


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


_SCHEMAS: dict[Any, tuple[Any, list[str] | None]] = {}


def _batch_schema(model: Any) -> tuple[Any, list[str] | None]:
    """The model's schema without its `unique` setting (checked per payload instead), and that setting."""
    if model not in _SCHEMAS:
        schema = model.to_schema()
        unique = list(schema.unique) if schema.unique else None
        if unique:
            schema = copy.deepcopy(schema)
            schema.unique = None
        _SCHEMAS[model] = (schema, unique)
    return _SCHEMAS[model]


def validate_pieces(pieces: list[tuple[int, pd.DataFrame]], model: Any):
    """Validate several payloads' frames of one entity at once.

    Returns (valid rows, their payload positions, their record indexes, [(position, quarantine
    row)], {position: schema-level failure}). The outcome per payload is the one validating it
    alone gives: uniqueness is checked within each payload; a frame lacking a column of the
    model, or a batch raising a schema-level error, is validated payload by payload.
    """
    empty = (pd.DataFrame(), np.zeros(0, int), np.zeros(0, int))
    if not pieces:
        return (*empty, [], {})
    schema, unique = _batch_schema(model)
    columns = set(schema.columns)
    together = [(p, df) for p, df in pieces if columns <= set(df.columns)]
    alone = [(p, df) for p, df in pieces if not columns <= set(df.columns)]
    parts, qrows, failed = [], [], {}
    if len(together) > 1:
        with warnings.catch_warnings():
            # all-NA columns of some payloads: the dtype comes from the others, coercion does the rest
            warnings.simplefilter("ignore", FutureWarning)
            big = pd.concat([df for _, df in together], ignore_index=True)
        pos = np.repeat([p for p, _ in together], [len(df) for _, df in together])
        rec = np.concatenate([np.arange(len(df)) for _, df in together])
        try:
            valid, rows = validate_frame(big, schema)
        except SchemaLevelError:
            alone, together = alone + together, []
        else:
            if unique:
                keys = big[unique].copy()
                keys["__payload"] = pos
                dup = keys.duplicated(keep=False).to_numpy()
                for idx in np.flatnonzero(dup):
                    for col in unique:
                        value = big.at[idx, col]
                        rows.append({"record_index": int(idx), "record": record_json(big.loc[idx]),
                                     "column_name": col, "check_name": "multiple_fields_uniqueness",
                                     "failure_value": None if _is_missing(value) else str(value)})
                if dup.any():
                    valid = valid[~dup[valid.index.to_numpy()]]
            for r in rows:
                idx = r["record_index"]
                qrows.append((int(pos[idx]), {**r, "record_index": int(rec[idx])}))
            vidx = valid.index.to_numpy()
            parts.append((valid, pos[vidx], rec[vidx]))
    else:
        alone = alone + together
    for p, df in alone:
        try:
            valid, rows = validate_frame(df, model)
        except SchemaLevelError as exc:
            failed[p] = str(exc)
            continue
        qrows.extend((p, r) for r in rows)
        parts.append((valid, np.full(len(valid), p), valid.index.to_numpy()))
    parts = [x for x in parts if len(x[0])]
    if not parts:
        return (*empty, qrows, failed)
    if len(parts) == 1:
        valid, vpos, vrec = parts[0]
        return valid.reset_index(drop=True), vpos, vrec, qrows, failed
    valid = pd.concat([x[0] for x in parts], ignore_index=True)
    return (valid, np.concatenate([x[1] for x in parts]), np.concatenate([x[2] for x in parts]), qrows, failed)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def validate_frame(df: pd.DataFrame, model: Any) -> tuple[pd.DataFrame, list[dict]]:
    """Lazy pandera validation. Returns (valid rows, quarantine rows for the failing ones).

    Row-level failures (with an index) are quarantined and validation reruns on the rest, since
    a value that cannot be coerced also makes that column's checks fail as a whole. What still
    fails without an index then is schema-level (missing column, uncoercible type): raised.
    """
    rows: list[dict] = []
    remaining = df
    for _ in range(4):
        if remaining.empty:
            return remaining, rows
        try:
            return model.validate(remaining, lazy=True), rows
        except pandera.errors.SchemaErrors as exc:
            cases = exc.failure_cases
        row_cases = cases[cases["index"].notna()]
        if row_cases.empty:
            first = cases.iloc[0]
            column = first.get("column")
            raise SchemaLevelError(
                f"{_model_name(model)}: check {first['check']} failed"
                + (f" on column {column}" if column is not None and not pd.isna(column) else "")
                + (f" ({first['failure_case']})" if first.get("failure_case") is not None else "")
            )
        bad_index = set()
        for case in row_cases.itertuples(index=False):
            idx = int(case.index)
            bad_index.add(idx)
            value = case.failure_case
            rows.append({
                "record_index": idx,
                "record": record_json(df.loc[idx]),
                "column_name": None if pd.isna(case.column) else str(case.column),
                "check_name": str(case.check),
                "failure_value": None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value),
            })
        remaining = remaining.drop(index=sorted(bad_index))
    raise SchemaLevelError(f"{_model_name(model)}: validation did not settle after quarantining rows")


def _model_name(model: Any) -> str:
    return getattr(model, "__name__", None) or getattr(model, "name", None) or "schema"

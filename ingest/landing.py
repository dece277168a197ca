"""Validate parsed payloads with pandera and land them as Parquet; failing rows to quarantine.

Layout under warehouse/landing/:
  <source>/<entity>/<raw_sha256>.parquet    valid rows of one raw payload (+ _schema.parquet, empty)
  _quarantine/<source>/<raw_sha256>.parquet rejected rows with the reason (+ _schema.parquet)
  <source>/_ledger/<raw_sha256>.json        what became of each payload; a payload with no ledger
                                            entry is pending, so deleting landing/ replays raw/.
Landing content is a pure function of the raw payload sequence (no wall-clock values), so a
rebuild from raw gives identical rows.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import duckdb
import pandas as pd
import pandera.errors

from ingest.raw_store import RawEntry, RawStore, parse_iso
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
META_COLUMNS = {"_raw_sha256": "VARCHAR", "_fetched_at": "TIMESTAMP", "_record_index": "BIGINT"}


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
            if not path.exists():
                write_parquet(pd.DataFrame({c: pd.Series(dtype="object") for c in types}), path, types)
        qpath = self.root / "_quarantine" / "_schema.parquet"
        if not qpath.exists():
            write_parquet(pd.DataFrame({c: pd.Series(dtype="object") for c in QUARANTINE_COLUMNS}),
                          qpath, QUARANTINE_COLUMNS)

    # ---- ledger -------------------------------------------------------------------------
    def outcomes(self, source: str) -> list[PayloadOutcome]:
        folder = self.ledger_dir(source)
        if not folder.exists():
            return []
        out = [PayloadOutcome(**json.loads(p.read_text())) for p in folder.glob("*.json")]
        return sorted(out, key=lambda o: (o.fetched_at, o.sha256))

    def pending(self, source: str) -> list[RawEntry]:
        folder = self.ledger_dir(source)
        done = {p.stem for p in folder.glob("*.json")} if folder.exists() else set()
        return [e for e in self.store.payloads(source) if e.sha256 not in done]

    def _record(self, source: str, outcome: PayloadOutcome) -> None:
        folder = self.ledger_dir(source)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{outcome.sha256}.tmp"
        tmp.write_text(json.dumps(asdict(outcome), sort_keys=True))
        os.replace(tmp, folder / f"{outcome.sha256}.json")

    # ---- landing ------------------------------------------------------------------------
    def land_pending(self, source: Source) -> list[PayloadOutcome]:
        """Parse, validate and land every stored payload not landed yet, oldest first."""
        self.ensure_layout(source)
        pending = self.pending(source.name)
        outcomes = []
        for i, entry in enumerate(pending, 1):
            if len(pending) > 20 and (i % max(1, len(pending) // 10) == 0):
                self.log(f"  {source.name}: landed {i}/{len(pending)} payloads")
            outcome = self.land_payload(source, entry)
            outcomes.append(outcome)
            if outcome.status == "failed":
                raise SourceFailed(f"{source.name}: {outcome.reason}")
        source.validate_payloads(outcomes)
        return outcomes

    def land_payload(self, source: Source, entry: RawEntry) -> PayloadOutcome:
        outcome = PayloadOutcome(sha256=entry.sha256, fetched_at=entry.fetched_at, url=entry.url,
                                 status="landed")
        fetched_at = parse_iso(entry.fetched_at).replace(tzinfo=None)
        quarantine: list[dict] = []
        try:
            frames = source.parse(self.store.read(entry), entry)
        except PayloadRejected as exc:
            outcome.status, outcome.reason = "rejected", exc.reason
            quarantine.append(self._quarantine_row(source.name, "", entry, fetched_at, None, None,
                                                   None, exc.check, exc.reason))
            self._write_quarantine(source.name, entry, quarantine)
            self._record(source.name, outcome)
            return outcome

        valid_frames: dict[str, pd.DataFrame] = {}
        try:
            for ent in source.entities:
                df = frames.get(ent.name)
                if df is None:
                    df = pd.DataFrame()
                df = df.reset_index(drop=True)
                outcome.parsed[ent.name] = len(df)
                if df.empty:
                    valid_frames[ent.name] = df
                    outcome.landed[ent.name] = 0
                    outcome.quarantined[ent.name] = 0
                    continue
                valid, rows = validate_frame(df, ent.model)
                for r in rows:
                    quarantine.append(self._quarantine_row(source.name, ent.name, entry, fetched_at, **r))
                valid_frames[ent.name] = valid
                outcome.landed[ent.name] = len(valid)
                outcome.quarantined[ent.name] = len({r["record_index"] for r in rows})
        except SchemaLevelError as exc:
            outcome.status, outcome.reason = "failed", str(exc)
        if outcome.status == "landed":
            outcome.status, outcome.reason = self._volume_verdict(source, outcome)
        if outcome.status == "failed":
            quarantine = [self._quarantine_row(source.name, "", entry, fetched_at, None, None, None,
                                               "payload_failed", outcome.reason)]
        else:
            for ent in source.entities:
                df = valid_frames.get(ent.name)
                if df is None or df.empty:
                    continue
                df = df.copy()
                df["_raw_sha256"] = entry.sha256
                df["_fetched_at"] = fetched_at
                df["_record_index"] = df.index.astype("int64")
                write_parquet(df, self.entity_dir(source.name, ent.name) / f"{entry.sha256}.parquet",
                              model_column_types(ent.model))
        self._write_quarantine(source.name, entry, quarantine)
        self._record(source.name, outcome)
        return outcome

    def _volume_verdict(self, source: Source, outcome: PayloadOutcome) -> tuple[str, str | None]:
        total = sum(outcome.landed.values())
        if total == 0:
            return "failed", f"payload {outcome.sha256[:12]} from {outcome.url} has zero valid rows"
        if source.kind != "snapshot":
            return "landed", None
        previous = [o for o in self.outcomes(source.name) if o.status == "landed"]
        if previous:
            last = sum(previous[-1].landed.values())
            if total < 0.5 * last:
                return "failed", (f"payload {outcome.sha256[:12]} has {total} valid rows, fewer than half "
                                  f"of the last good landing ({last})")
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
                f"{model.__name__}: check {first['check']} failed"
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
    raise SchemaLevelError(f"{model.__name__}: validation did not settle after quarantining rows")

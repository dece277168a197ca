"""pandera validation of parsed frames; the rows that fail go to the quarantine.

Quarantine layout: landing/_quarantine/<source>/<raw_sha256>.parquet (+ _quarantine/_schema.parquet),
one row per failed check of a record, with the record as JSON and the reason.
"""
from __future__ import annotations

import copy
import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pandera.errors

from ingest.landing.parquet import write_parquet
from ingest.raw_store import RawEntry

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


class SchemaLevelError(Exception):
    """A failure that is not about single rows: a missing column, an uncoercible column."""


# ---- quarantine rows and files -----------------------------------------------------------------

def quarantine_row(source: str, entity: str, entry: RawEntry, fetched_at: Any, record_index: int | None,
                   record: str | None, column_name: str | None, check_name: str, failure_value: Any) -> dict:
    return {
        "source": source, "entity": entity, "raw_sha256": entry.sha256,
        "record_index": record_index, "record": record, "column_name": column_name,
        "check_name": check_name, "failure_value": None if failure_value is None else str(failure_value),
        "quarantined_at": fetched_at,
    }


def write_quarantine(path: Path, rows: list[dict]) -> None:
    """One payload's quarantine file: written when it has rows, removed when it has none."""
    if rows:
        write_parquet(pd.DataFrame(rows, columns=list(QUARANTINE_COLUMNS)), path, QUARANTINE_COLUMNS)
    elif path.exists():
        path.unlink()


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


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# ---- one frame -------------------------------------------------------------------------------

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
            raise _schema_level_error(model, cases.iloc[0])
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
                "failure_value": None if _is_missing(value) else str(value),
            })
        remaining = remaining.drop(index=sorted(bad_index))
    raise SchemaLevelError(f"{_model_name(model)}: validation did not settle after quarantining rows")


def _schema_level_error(model: Any, first: pd.Series) -> SchemaLevelError:
    column = first.get("column")
    return SchemaLevelError(
        f"{_model_name(model)}: check {first['check']} failed"
        + (f" on column {column}" if column is not None and not pd.isna(column) else "")
        + (f" ({first['failure_case']})" if first.get("failure_case") is not None else "")
    )


def _model_name(model: Any) -> str:
    return getattr(model, "__name__", None) or getattr(model, "name", None) or "schema"


# ---- several payloads' frames at once ----------------------------------------------------------

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


Piece = tuple[int, pd.DataFrame]  # (payload position in the batch, its frame of one entity)
Part = tuple[pd.DataFrame, np.ndarray, np.ndarray]  # (valid rows, their positions, their record indexes)


def validate_pieces(pieces: list[Piece], model: Any):
    """Validate several payloads' frames of one entity at once.

    Returns (valid rows, their payload positions, their record indexes, [(position, quarantine
    row)], {position: schema-level failure}). The outcome per payload is the one validating it
    alone gives: uniqueness is checked within each payload; a frame lacking a column of the
    model, or a batch raising a schema-level error, is validated payload by payload.
    """
    if not pieces:
        return (*_no_rows(), [], {})
    schema, unique = _batch_schema(model)
    columns = set(schema.columns)
    together = [(p, df) for p, df in pieces if columns <= set(df.columns)]
    alone = [(p, df) for p, df in pieces if not columns <= set(df.columns)]
    parts: list[Part] = []
    qrows: list[tuple[int, dict]] = []
    if len(together) > 1:
        try:
            part, rows = _validate_together(together, schema, unique)
        except SchemaLevelError:
            alone = alone + together
        else:
            parts.append(part)
            qrows.extend(rows)
    else:
        alone = alone + together
    more, rows, failed = _validate_alone(alone, model)
    parts.extend(more)
    qrows.extend(rows)
    return (*_joined(parts), qrows, failed)


def _validate_together(together: list[Piece], schema: Any, unique: list[str] | None):
    """One pandera validation of the payloads' frames concatenated; uniqueness within each payload.
    Raises SchemaLevelError (then each payload is validated alone)."""
    with warnings.catch_warnings():
        # all-NA columns of some payloads: the dtype comes from the others, coercion does the rest
        warnings.simplefilter("ignore", FutureWarning)
        big = pd.concat([df for _, df in together], ignore_index=True)
    return _validate_big(big, together, schema, unique)


def _validate_big(big: pd.DataFrame, together: list, schema: Any, unique: list[str] | None):
    pos = np.repeat([p for p, _ in together], [len(part) for _, part in together])
    rec = np.concatenate([np.arange(len(part)) for _, part in together])
    valid, rows = validate_frame(big, schema)
    if unique:
        valid = _drop_duplicates_per_payload(big, valid, pos, unique, rows)
    qrows = [(int(pos[r["record_index"]]), {**r, "record_index": int(rec[r["record_index"]])}) for r in rows]
    vidx = valid.index.to_numpy()
    return (valid, pos[vidx], rec[vidx]), qrows


# ---- several payloads' records at once (Source.parse_rows) ---------------------------------------

_COLUMNS: dict[Any, list[str]] = {}


def model_columns(model: Any) -> list[str]:
    """The model's columns in order: the columns of a frame built from a source's records."""
    if model not in _COLUMNS:
        _COLUMNS[model] = list(model.to_schema().columns)
    return _COLUMNS[model]


def validate_records(pieces: list[tuple[int, list[dict]]], model: Any):
    """validate_pieces for records (Source.parse_rows): the same results, but the payloads' frame
    is built once from all their records, not per payload and then concatenated (pandas infers
    each column's dtype from all values, as concat does with all-NA pieces left out)."""
    if not pieces:
        return (*_no_rows(), [], {})
    columns = model_columns(model)
    if len(pieces) == 1:
        return _alone_records(pieces, model, columns)
    schema, unique = _batch_schema(model)
    big = pd.DataFrame([r for _, part in pieces for r in part], columns=columns)
    try:
        part, qrows = _validate_big(big, pieces, schema, unique)
    except SchemaLevelError:
        return _alone_records(pieces, model, columns)
    return (*_joined([part]), qrows, {})


def _alone_records(pieces, model, columns):
    parts, qrows, failed = _validate_alone([(p, pd.DataFrame(rows, columns=columns)) for p, rows in pieces], model)
    return (*_joined(parts), qrows, failed)


def _drop_duplicates_per_payload(big: pd.DataFrame, valid: pd.DataFrame, pos: np.ndarray,
                                 unique: list[str], rows: list[dict]) -> pd.DataFrame:
    """The model's `unique` check within each payload: duplicates are quarantined (added to rows)."""
    keys = big[unique].copy()
    keys["__payload"] = pos
    dup = keys.duplicated(keep=False).to_numpy()
    for idx in np.flatnonzero(dup):
        for col in unique:
            value = big.at[idx, col]
            rows.append({"record_index": int(idx), "record": record_json(big.loc[idx]),
                         "column_name": col, "check_name": "multiple_fields_uniqueness",
                         "failure_value": None if _is_missing(value) else str(value)})
    return valid[~dup[valid.index.to_numpy()]] if dup.any() else valid


def _validate_alone(alone: list[Piece], model: Any) -> tuple[list[Part], list[tuple[int, dict]], dict[int, str]]:
    parts, qrows, failed = [], [], {}
    for p, df in alone:
        try:
            valid, rows = validate_frame(df, model)
        except SchemaLevelError as exc:
            failed[p] = str(exc)
            continue
        qrows.extend((p, r) for r in rows)
        parts.append((valid, np.full(len(valid), p), valid.index.to_numpy()))
    return parts, qrows, failed


def _no_rows() -> Part:
    return pd.DataFrame(), np.zeros(0, int), np.zeros(0, int)


def _joined(parts: list[Part]) -> Part:
    parts = [x for x in parts if len(x[0])]
    if not parts:
        return _no_rows()
    if len(parts) == 1:
        valid, vpos, vrec = parts[0]
        return valid.reset_index(drop=True), vpos, vrec
    valid = pd.concat([x[0] for x in parts], ignore_index=True)
    return valid, np.concatenate([x[1] for x in parts]), np.concatenate([x[2] for x in parts])

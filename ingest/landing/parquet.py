"""Parquet files of the landing area, written and read with DuckDB (no pyarrow), and the mapping
from pandera dtypes to the DuckDB types the files carry."""
from __future__ import annotations

import itertools
import os
import threading
from pathlib import Path
from typing import Any, Callable

import duckdb
import pandas as pd

# the columns landing adds to every entity's rows: which payload, when, which record of it
META_COLUMNS = {"_raw_sha256": "VARCHAR", "_fetched_at": "TIMESTAMP", "_record_index": "BIGINT"}


_DB: tuple[int, duckdb.DuckDBPyConnection] | None = None  # (pid, an in-memory database) of this process
_DB_LOCK = threading.Lock()
_NAMES = itertools.count()


def _cursor() -> duckdb.DuckDBPyConnection:
    """A new connection to this process's in-memory database: opening a database costs ~17 ms
    (and a write ~50 ms in all), once per quarantine file of a replay; a cursor costs nothing."""
    global _DB
    with _DB_LOCK:
        if _DB is None or _DB[0] != os.getpid():
            _DB = (os.getpid(), duckdb.connect())
        return _DB[1].cursor()


def write_parquet(df: pd.DataFrame, path: Path, column_types: dict[str, str] | None = None) -> None:
    """Write a frame with DuckDB (no pyarrow), atomically, optionally casting columns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    con = _cursor()
    name = f"frame_{next(_NAMES)}"
    try:
        con.register(name, df)
        if column_types:
            select = ", ".join(
                f'CAST("{c}" AS {column_types[c]}) AS "{c}"' if c in column_types else f'"{c}"'
                for c in df.columns
            )
        else:
            select = "*"
        target = str(tmp).replace("'", "''")
        con.execute(f"COPY (SELECT {select} FROM {name}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)")
    finally:
        con.unregister(name)
        con.close()
    os.replace(tmp, path)


def write_empty(path: Path, column_types: dict[str, str]) -> None:
    """A typed file without rows, so dbt can read a folder before its first payload lands."""
    write_parquet(pd.DataFrame({c: pd.Series(dtype="object") for c in column_types}), path, column_types)


def duck_type(dtype: Any) -> str:
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
    """DuckDB types of a pandera model's columns, then the landing meta columns."""
    schema = model.to_schema()
    types = {name: duck_type(col.dtype) for name, col in schema.columns.items()}
    types.update(META_COLUMNS)
    return types


def parquet_columns(path: Path) -> list[str]:
    con = _cursor()  # a refresh asks for every entity's schema file: ~12 ms a new database
    try:
        return [r[0] for r in con.execute("select name from parquet_schema(?) where num_children is null",
                                          [str(path)]).fetchall()]
    finally:
        con.close()


def distinct_values(path: Path | str, column: str) -> list:
    """DISTINCT values of one column of a Parquet file or glob (files with other columns unioned)."""
    con = _cursor()
    try:
        return [r[0] for r in con.execute(
            f'SELECT DISTINCT "{column}" FROM read_parquet(?, union_by_name=true)', [str(path)]).fetchall()]
    finally:
        con.close()


def landed_values_reader(landing_root: Path | Callable[[], Path], source: str) -> Callable[[str, str], set]:
    """A FetchContext.landed_values: the values of a column landed so far for one entity of a
    source (landing/<source>/<entity>/*.parquet). `landing_root` may be a callable, read per call."""
    def read(entity: str, column: str) -> set:
        root = landing_root() if callable(landing_root) else landing_root
        folder = Path(root) / source / entity
        if not any(folder.glob("*.parquet")):
            return set()
        return {v for v in distinct_values(folder / "*.parquet", column) if v is not None}
    return read

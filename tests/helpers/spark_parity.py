"""The dbt project on Apache Spark (dbt-spark, session method) beside its DuckDB build: build on
Spark from a warehouse home's landing, read the tables both engines built, compare row for row.

Spark writes its tables as Parquet under <spark warehouse>/tables/<schema>.db/<table>/ (profiles.yml,
target `spark`); they are read back with DuckDB, so both sides go through one reader.

Normalisation (documented tolerance): floating point values are compared at FLOAT_DIGITS
significant digits, because the engines sum and divide in other orders (Spark aggregates per
partition); decimals compare as floats; timestamps as naive UTC; everything else exactly.
"""
from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from orchestration.manifest import DBT_NO_TRACKING
from publish.spark_build import spark_build_env
from tests.helpers.paths import PROJECT_ROOT

DBT = str(Path(sys.executable).parent / "dbt")
PROJECT = PROJECT_ROOT / "dbt_project"
SCHEMAS = ("marts", "site")
FLOAT_DIGITS = 9


def spark_missing() -> str | None:
    """Why the Spark build cannot run here (None when it can): pyspark/dbt-spark or Java absent."""
    for module in ("pyspark", "dbt.adapters.spark"):
        try:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed (make spark)"
        except ModuleNotFoundError:
            return f"{module} is not installed (make spark)"
    java_home = os.environ.get("JAVA_HOME")
    if not shutil.which("java") and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        return "java is not installed (make spark)"
    return None


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHWH_")}
    env.update(BENCHWH_HOME=str(home), **DBT_NO_TRACKING, SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, **extra)
    return env


def run_dbt(home: Path, work: Path, command: str, *args: str, target: str = "spark", timeout: float = 1500,
            **env_extra: str) -> subprocess.CompletedProcess:
    """`dbt <command> --target <target>` on the project, its target/ and logs/ under work/."""
    cmd = [DBT, command, "--target", target, "--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT),
           "--target-path", str(work / f"target-{target}"), "--log-path", str(work / f"logs-{target}"), *args]
    return subprocess.run(cmd, env=_env(home, **env_extra), capture_output=True, text=True, timeout=timeout,
                          cwd=str(home))  # the project's paths are relative to the home


def spark_build(home: Path, warehouse: Path, *args: str, command: str = "build",
                **env_extra: str) -> subprocess.CompletedProcess:
    """The project built on Spark (local mode, in-process) from home's landing into warehouse/.
    Data tests run; the dbt unit tests stay DuckDB's (their fixtures are DuckDB SQL)."""
    warehouse.mkdir(parents=True, exist_ok=True)
    extra = ("--exclude-resource-type", "unit_test") if command == "build" else ()
    return run_dbt(home, warehouse, command, *extra, *args, BENCHWH_SPARK_WAREHOUSE=str(warehouse),
                   **spark_build_env(home), **env_extra)


def duckdb_build(home: Path, work: Path, *args: str, command: str = "build", **env_extra: str) -> Path:
    """The project built on DuckDB from home's landing into work/build.duckdb."""
    build = work / "build.duckdb"
    done = run_dbt(home, work, command, *args, target="build", BENCHWH_BUILD_PATH=str(build), **env_extra)
    assert done.returncode == 0, done.stdout[-4000:]
    return build


def _norm(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return float(f"{value:.{FLOAT_DIGITS}g}") if value == value else "nan"
    if isinstance(value, decimal.Decimal):
        return _norm(float(value))
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return value


@dataclass
class Table:
    columns: list[str]
    rows: list[tuple] = field(default_factory=list)  # normalised, sorted

    @property
    def hashes(self) -> list[str]:
        return [hashlib.sha256(repr(r).encode()).hexdigest()[:16] for r in self.rows]


def _rows(con, sql: str) -> list[tuple]:
    return sorted((tuple(_norm(v) for v in row) for row in con.execute(sql).fetchall()), key=repr)


def duckdb_tables(db: Path, schemas=SCHEMAS) -> dict[str, Table]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = con.execute(
            "select table_schema, table_name from information_schema.tables where table_schema in "
            f"({', '.join(repr(s) for s in schemas)}) and table_type = 'BASE TABLE' order by 1, 2").fetchall()
        out = {}
        for schema, table in names:
            cols = [c for (c,) in con.execute(
                "select column_name from information_schema.columns where table_schema = ? and table_name = ? "
                "order by ordinal_position", [schema, table]).fetchall()]
            out[f"{schema}.{table}"] = Table(cols, _rows(con, f'select * from "{schema}"."{table}"'))
        return out
    finally:
        con.close()


def spark_tables(warehouse: Path, schemas=SCHEMAS) -> dict[str, Table]:
    """The Parquet tables Spark wrote (managed tables: tables/<schema>.db/<table>/part-*.parquet)."""
    con = duckdb.connect()
    out = {}
    for schema in schemas:
        base = warehouse / "tables" / f"{schema}.db"
        for folder in sorted(p for p in base.glob("*") if p.is_dir()) if base.is_dir() else []:
            files = sorted(str(f) for f in folder.glob("*.parquet"))
            if not files:
                sql = None
            else:
                sql = f"select * from read_parquet({files!r})"
            if sql is None:
                out[f"{schema}.{folder.name}"] = Table([], [])
                continue
            cols = [d[0] for d in con.execute(f"{sql} limit 0").description]
            out[f"{schema}.{folder.name}"] = Table(cols, _rows(con, sql))
    con.close()
    return out


def differences(duck: dict[str, Table], spark: dict[str, Table]) -> list[str]:
    """One line per difference: a table on one side only, other columns, other rows (the first
    differing row of the sorted lists, from both engines)."""
    out = []
    for name in sorted(set(duck) | set(spark)):
        if name not in spark:
            out.append(f"{name}: built on DuckDB, missing on Spark")
            continue
        if name not in duck:
            out.append(f"{name}: built on Spark, missing on DuckDB")
            continue
        d, s = duck[name], spark[name]
        if d.columns != s.columns:
            if sorted(d.columns) != sorted(s.columns):
                out.append(f"{name}: columns differ: duckdb {d.columns} spark {s.columns}")
                continue
            # DuckDB's columns follow the enforced contract's order, Spark's the select's
            at = [s.columns.index(c) for c in d.columns]
            s = Table(d.columns, sorted((tuple(row[i] for i in at) for row in s.rows), key=repr))
        if d.hashes != s.hashes:
            first = next((i for i, (a, b) in enumerate(zip(d.rows, s.rows)) if a != b), min(len(d.rows), len(s.rows)))
            d_row = dict(zip(d.columns, d.rows[first])) if first < len(d.rows) else None
            s_row = dict(zip(s.columns, s.rows[first])) if first < len(s.rows) else None
            diff_cols = sorted(c for c in d.columns if d_row and s_row and d_row[c] != s_row[c])
            out.append(f"{name}: rows differ (duckdb {len(d.rows)}, spark {len(s.rows)}); first differing "
                       f"sorted row #{first}, columns {diff_cols}:\n    duckdb {d_row}\n    spark  {s_row}")
    return out

"""A Spark build (dbt-spark, `benchwh refresh --engine spark`) made into the same DuckDB build file
a DuckDB build gives, so publish, history, exports, `status`, `diff` and every downstream reader
stay as they are.

dbt-spark writes each table as Parquet under `<spark warehouse>/tables/<schema>.db/<table>/`
(config.spark_dir). Each `marts`, `site` and `audit` table is read back into
`build/<run id>.duckdb` with the column types, NOT NULL and primary keys of its dbt contract (the
DuckDB types the contract names), so the file equals, row for row and type for type, what
dbt-duckdb builds from the same landing.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ingest import config

PUBLISHED_SCHEMAS = ("marts", "site", "audit")


def spark_tables(spark_warehouse: Path) -> dict[str, Path]:
    """`schema.table` -> the folder of its Parquet files, for the published schemas."""
    root = Path(spark_warehouse) / "tables"
    out = {}
    for schema in PUBLISHED_SCHEMAS:
        for folder in sorted((root / f"{schema}.db").glob("*")):
            if folder.is_dir() and not folder.name.startswith(("_", ".")):
                out[f"{schema}.{folder.name}"] = folder
    return out


def contracts(manifest_path: Path) -> dict[str, dict]:
    """`schema.table` -> its contracted columns ([(name, type, not_null)]) and primary key."""
    manifest = json.loads(Path(manifest_path).read_text())
    out = {}
    for node in manifest.get("nodes", {}).values():
        if node.get("resource_type") != "model" or node.get("schema") not in PUBLISHED_SCHEMAS:
            continue
        name = f"{node['schema']}.{node.get('alias') or node['name']}"
        columns = [(c["name"], c.get("data_type"),
                    any(k.get("type") == "not_null" for k in c.get("constraints", [])))
                   for c in node.get("columns", {}).values()]
        pk = next((k["columns"] for k in node.get("constraints", []) if k.get("type") == "primary_key"), [])
        pk = pk or [c["name"] for c in node.get("columns", {}).values()
                    if any(k.get("type") == "primary_key" for k in c.get("constraints", []))]
        enforced = (node.get("config", {}).get("contract") or {}).get("enforced", False)
        out[name] = {"columns": columns if enforced and all(t for _, t, _ in columns) else [], "primary_key": pk}
    return out


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def assemble_duckdb(spark_warehouse: Path, build_file: Path, manifest_path: Path) -> dict[str, int]:
    """Write the Spark build's published tables into a new DuckDB file; returns rows per table."""
    tables = spark_tables(spark_warehouse)
    if not tables:
        raise RuntimeError(f"the Spark build wrote no tables under {Path(spark_warehouse) / 'tables'}")
    shapes = contracts(manifest_path)
    build_file.unlink(missing_ok=True)
    con = duckdb.connect(str(build_file), config=config.duckdb_config())
    rows = {}
    try:
        for schema in PUBLISHED_SCHEMAS:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        for name, folder in tables.items():
            schema, table = name.split(".")
            files = str(folder / "*.parquet").replace("'", "''")
            source = f"read_parquet('{files}')"
            target = f"{_q(schema)}.{_q(table)}"
            shape = shapes.get(name) or {"columns": [], "primary_key": []}
            if shape["columns"] and not any(folder.glob("*.parquet")):
                source = None  # no rows and no file: the contract alone gives the table
            if shape["columns"]:
                defs = [f"{_q(c)} {t}{' NOT NULL' if nn else ''}" for c, t, nn in shape["columns"]]
                if shape["primary_key"]:
                    defs.append(f"PRIMARY KEY ({', '.join(_q(c) for c in shape['primary_key'])})")
                con.execute(f"CREATE TABLE {target} ({', '.join(defs)})")
                cols = ", ".join(f"CAST({_q(c)} AS {t})" for c, t, _ in shape["columns"])
                if source:
                    con.execute(f"INSERT INTO {target} SELECT {cols} FROM {source}")
            else:
                con.execute(f"CREATE TABLE {target} AS SELECT * FROM {source}")
            rows[name] = con.execute(f"SELECT count(*) FROM {target}").fetchone()[0]
        con.execute("CHECKPOINT")
    except BaseException:
        con.close()
        build_file.unlink(missing_ok=True)
        raise
    con.close()
    return rows


# DuckDB column types of the landing placeholders -> Spark DDL types
_SPARK_TYPES = {"VARCHAR": "string", "BIGINT": "bigint", "INTEGER": "int", "SMALLINT": "smallint",
                "TINYINT": "tinyint", "DOUBLE": "double", "FLOAT": "float", "BOOLEAN": "boolean",
                "DATE": "date", "TIMESTAMP": "timestamp", "TIMESTAMP WITH TIME ZONE": "timestamp",
                "BLOB": "binary", "HUGEINT": "decimal(38,0)", "UBIGINT": "decimal(20,0)",
                "UINTEGER": "bigint", "USMALLINT": "int", "UTINYINT": "smallint"}


def spark_type(duckdb_type: str) -> str:
    t = duckdb_type.upper()
    if t.endswith("[]"):
        return f"array<{spark_type(t[:-2])}>"
    if t.startswith("DECIMAL"):
        return t.lower()
    if t not in _SPARK_TYPES:
        raise ValueError(f"no Spark type for the landing column type {duckdb_type}")
    return _SPARK_TYPES[t]


def empty_landing_schemas(home: Path) -> dict[str, str]:
    """`source.entity` -> Spark column DDL, for each landing entity that has no data file yet.

    Spark never reads files whose names start with `_`, so it cannot infer a schema from an
    entity's `_schema.parquet` placeholder alone (a home where grid was never fetched, a bench
    home); the dbt macro register_landing_sources declares those sources with these columns."""
    out: dict[str, str] = {}
    con = duckdb.connect()
    try:
        for placeholder in sorted((Path(home) / "landing").glob("*/*/_schema.parquet")):
            folder = placeholder.parent
            if folder.parent.name.startswith("_") or any(folder.glob("[!_.]*.parquet")):
                continue
            described = con.execute("describe select * from read_parquet(?)", [str(placeholder)]).fetchall()
            out[f"{folder.parent.name}.{folder.name}"] = ", ".join(
                f"`{name}` {spark_type(kind)}" for name, kind, *_ in described)
    finally:
        con.close()
    return out


def spark_build_env(home: Path) -> dict[str, str]:
    """What every Spark build of home's landing needs in its environment besides the warehouse."""
    return {"BENCHWH_SPARK_EMPTY_SOURCES": json.dumps(empty_landing_schemas(home))}

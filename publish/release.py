"""Immutable releases: `exports/releases/<version>/` written once, `exports/latest.json` last (DESIGN §1).

A release folder holds one Parquet file per exported table (sorted by the key a page asks for, row
groups sized for HTTP range reads, descriptions and units in the file's key-value metadata), the
Frictionless `datapackage.json` that describes them, and `changes.json` (the diff against the
version it replaced). It is built under a temporary name and renamed whole, so a folder that exists
is complete; nothing ever writes into it again. `latest.json` names the current release and is
replaced atomically after everything else, so a reader who follows it never mixes two versions.
Descriptions, keys and constraints come from the dbt manifest of the build (build/dbt-target).
See docs/releases.md.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import duckdb

from ingest import config
from ingest.files import fsync_dir, link_or_copy, tmp_name, write_atomically
from ingest.raw_store import file_sha256

RELEASES = "releases"
LATEST = "latest.json"
# every release of a version still in history/ stays, so a rollback points latest back at the files
# it published; a reader holding an older version has until that many publishes to finish reading
RELEASES_KEEP = 7
# rows per Parquet row group: small enough that one model's rows of the largest table are a few
# row groups (docs/benchmarks.md, range reads), large enough that the footer stays small
ROW_GROUP_ROWS = 8192
# the columns a page filters on, in order: a file is sorted by those it has, then by its key
PAGE_KEYS = ("model_id", "hardware_id")
DATAPACKAGE_PROFILE = "data-package"
LICENSE_IDS = {"CC BY 4.0": "CC-BY-4.0"}

# units by column-name convention (docs/architecture.md "Speed facts": _bytes, _gb = 1e9, _gib = 2^30);
# a column's `meta: {unit: ...}` in the dbt YAML overrides. First match wins.
UNIT_RULES = (
    (r"_usd_per_mtok$", "USD per million tokens"),
    (r"_usd_per_hour$", "USD per hour"),
    (r"(^|_)usd$|_usd$", "USD"),
    (r"gco2_per_kwh$", "gCO2e per kWh"),
    (r"gco2_per_mtok$", "gCO2e per million tokens"),
    (r"(^|_)tps(_|$)", "tokens per second"),
    (r"(^|_)ms(_|$)", "milliseconds"),
    (r"_bytes$", "bytes"),
    (r"_gib$", "GiB (2^30 bytes)"),
    (r"_gb$", "GB (1e9 bytes)"),
    (r"_gbps$", "GB per second"),
    (r"(^|_)w$", "watts"),
    (r"j_per_token$", "joules per token"),
    (r"(^|_)j$", "joules"),
    (r"_tokens$", "tokens"),
    (r"_pct$", "percent"),
    (r"^params_b$", "billions of parameters"),
    (r"^bits_per_weight$", "bits per weight"),
)
FIELD_TYPES = (  # DuckDB type -> Table Schema type
    (r"\[\]$|^STRUCT|^MAP", "any"),
    (r"^(VARCHAR|UUID)", "string"),
    (r"^(BIGINT|INTEGER|SMALLINT|TINYINT|HUGEINT|UBIGINT|UINTEGER|USMALLINT|UTINYINT)$", "integer"),
    (r"^(DOUBLE|FLOAT|REAL|DECIMAL)", "number"),
    (r"^BOOLEAN$", "boolean"),
    (r"^DATE$", "date"),
    (r"^TIMESTAMP", "datetime"),
    (r"^TIME", "time"),
)


class ReleaseError(Exception):
    pass


def releases_dir(exports: Path) -> Path:
    return exports / RELEASES


def unit_for(column: str, meta: dict | None = None) -> str | None:
    if meta and meta.get("unit"):
        return str(meta["unit"])
    for pattern, unit in UNIT_RULES:
        if re.search(pattern, column):
            return unit
    return None


def field_type(duckdb_type: str) -> str:
    for pattern, kind in FIELD_TYPES:
        if re.search(pattern, duckdb_type.upper()):
            return kind
    return "any"


def dbt_manifest_path() -> Path | None:
    """The manifest of the home's last dbt build, else the project's prepared one."""
    for path in (config.home() / "build" / "dbt-target" / "manifest.json",
                 config.dbt_project_dir() / "target" / "manifest.json"):
        if path.exists():
            return path
    return None


def table_docs(manifest_path: Path | None) -> dict[str, dict]:
    """Per `schema.table`: description, columns (description, unit, required, enum), primary key,
    foreign keys and the dbt sources upstream, read from dbt's manifest.json (a documented artifact)."""
    if manifest_path is None:
        return {}
    manifest = json.loads(manifest_path.read_text())
    nodes, by_id = manifest["nodes"], {}
    docs: dict[str, dict] = {}
    for node_id, node in nodes.items():
        if node["resource_type"] != "model":
            continue
        name = f"{node['schema']}.{node.get('alias') or node['name']}"
        by_id[node_id] = name
        pk = next((c["columns"] for c in node.get("constraints", []) if c["type"] == "primary_key"), None)
        docs[name] = {
            "description": (node.get("description") or "").strip(),
            "columns": {c: {"description": (col.get("description") or "").strip(),
                            "unit": unit_for(c, col.get("meta")),
                            "required": any(k["type"] in ("not_null", "primary_key") for k in col.get("constraints", []))}
                        for c, col in node.get("columns", {}).items()},
            "primary_key": pk,
            "foreign_keys": [],
            "sources": sorted(_upstream_sources(node_id, nodes)),
        }
    for node in nodes.values():
        meta, attached = node.get("test_metadata") or {}, node.get("attached_node")
        if node["resource_type"] != "test" or attached not in by_id:
            continue
        table, kwargs = docs[by_id[attached]], meta.get("kwargs", {})
        if meta.get("name") == "unique_key" and not table["primary_key"]:
            table["primary_key"] = list(kwargs["columns"])
        elif meta.get("name") == "accepted_values" and kwargs.get("column_name") in table["columns"]:
            table["columns"][kwargs["column_name"]]["enum"] = list(kwargs["values"])
        elif meta.get("name") == "relationships":
            target = next((by_id[n] for n in node["depends_on"]["nodes"] if n != attached and n in by_id), None)
            if target:
                table["foreign_keys"].append({"fields": [kwargs["column_name"]], "table": target,
                                              "reference_fields": [kwargs["field"]]})
    return docs


def _upstream_sources(node_id: str, nodes: dict) -> set[str]:
    seen, stack, sources = set(), [node_id], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for parent in nodes.get(current, {}).get("depends_on", {}).get("nodes", []):
            if parent.startswith("source."):
                sources.add(parent.split(".")[2])
            elif parent in nodes:
                stack.append(parent)
    return sources


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sort_keys(columns: list[str], doc: dict) -> list[str]:
    keys = [k for k in PAGE_KEYS if k in columns]
    keys += [k for k in (doc.get("primary_key") or []) if k in columns and k not in keys]
    return keys


def _write_table(con: duckdb.DuckDBPyConnection, table: str, info: dict, doc: dict, path: Path) -> list[str]:
    schema, name = table.split(".", 1)
    columns = [c["name"] for c in info["columns"]]
    keys = _sort_keys(columns, doc)
    order = ", ".join(f'"{k}"' for k in keys) if keys else "ALL"
    column_docs = {c: {"description": doc.get("columns", {}).get(c, {}).get("description", ""),
                       "unit": doc.get("columns", {}).get(c, {}).get("unit")} for c in columns}
    metadata = {"table": table, "description": doc.get("description", ""),
                "columns": json.dumps(column_docs, sort_keys=True), "sorted_by": ",".join(keys)}
    kv = ", ".join(f'"{k}": {_sql_string(v)}' for k, v in metadata.items())
    con.execute(f'COPY (SELECT * FROM "{schema}"."{name}" ORDER BY {order}) TO {_sql_string(str(path))} '
                f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS}, KV_METADATA {{{kv}}})")
    return keys


def _licenses(source_names: list[str], sources_meta: dict) -> list[dict]:
    """Open Definition ids where a source's licence has one; otherwise `notspecified` (also an Open
    Definition id) with the source's own words as the title."""
    out = []
    for name in source_names:
        text = sources_meta.get(name, {}).get("license")
        if text:
            out.append({"name": LICENSE_IDS.get(text, "notspecified"), "title": f"{name}: {text}"})
    return out


def _sources(source_names: list[str], sources_meta: dict) -> list[dict]:
    return [{"title": name, "attribution": sources_meta[name].get("attribution"),
             "vintage": sources_meta[name].get("vintage"), "demo": bool(sources_meta[name].get("demo"))}
            for name in source_names if name in sources_meta]


def datapackage(version: dict, resources: list[dict], sources_meta: dict) -> dict:
    names = sorted(sources_meta)
    return {
        "profile": DATAPACKAGE_PROFILE,
        "name": "bench-warehouse",
        "title": "Bench Warehouse: LLM inference benchmarks (speeds, memory, cost, carbon)",
        "version": version["version"],
        "created": str(version["build_started_at"]).replace(" ", "T"),
        "code_revision": version["code_revision"],
        "demo_data": sorted(n for n, m in sources_meta.items() if m.get("demo")),
        "licenses": _licenses(names, sources_meta),
        "sources": _sources(names, sources_meta),
        "resources": resources,
    }


def _resource(table: str, info: dict, doc: dict, path: Path, sort_keys: list[str],
              exported: set[str], sources_meta: dict) -> dict:
    fields = []
    for column in info["columns"]:
        col_doc = doc.get("columns", {}).get(column["name"], {})
        field = {"name": column["name"], "type": field_type(column["type"]),
                 "description": col_doc.get("description", ""), "duckdb_type": column["type"]}
        if col_doc.get("unit"):
            field["unit"] = col_doc["unit"]
        constraints = {k: col_doc[k] for k in ("enum",) if col_doc.get(k)}
        if col_doc.get("required"):
            constraints["required"] = True
        if constraints:
            field["constraints"] = constraints
        fields.append(field)
    schema = {"fields": fields}
    if doc.get("primary_key"):
        schema["primaryKey"] = doc["primary_key"]
    foreign = [fk for fk in doc.get("foreign_keys", []) if fk["table"] in exported]
    if foreign:
        schema["foreignKeys"] = [{"fields": fk["fields"], "reference": {
            "resource": fk["table"].split(".", 1)[1], "fields": fk["reference_fields"]}} for fk in foreign]
    sources = [s for s in doc.get("sources", []) if s in sources_meta]
    return {
        "name": table.split(".", 1)[1], "path": path.name, "profile": "tabular-data-resource",
        "format": "parquet", "mediatype": "application/vnd.apache.parquet",
        "title": table, "description": doc.get("description", ""),
        "bytes": path.stat().st_size, "hash": f"sha256:{file_sha256(path)}", "rows": info["rows"],
        "sorted_by": sort_keys, "row_group_rows": ROW_GROUP_ROWS,
        "licenses": _licenses(sources, sources_meta), "sources": _sources(sources, sources_meta),
        "schema": schema,
    }


def write_release(published: Path, exports: Path, exported: dict[str, dict], version: dict,
                  sources_meta: dict, changes: dict | None) -> Path:
    """Write `releases/<version>/` once (under a temporary name, fsynced, renamed whole). A release
    that exists is never written again: a rollback to it only points `latest.json` back."""
    folder = releases_dir(exports) / version["version"]
    if (folder / "datapackage.json").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_name(folder)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o755)
    try:
        docs = table_docs(dbt_manifest_path())
        names = set(exported)
        resources = []
        con = duckdb.connect(str(published), read_only=True, config=config.duckdb_config())
        try:
            for table, info in exported.items():
                path = tmp / f"{table.split('.', 1)[1]}.parquet"
                keys = _write_table(con, table, info, docs.get(table, {}), path)
                resources.append(_resource(table, info, docs.get(table, {}), path, keys, names, sources_meta))
        finally:
            con.close()
        (tmp / "changes.json").write_text(json.dumps(changes, indent=2, sort_keys=True, default=str))
        (tmp / "datapackage.json").write_text(json.dumps(datapackage(version, resources, sources_meta),
                                                         indent=2, sort_keys=True, default=str))
        for item in tmp.iterdir():
            with open(item, "rb") as fh:
                os.fsync(fh.fileno())
        fsync_dir(tmp)
        os.rename(tmp, folder)
        fsync_dir(folder.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def write_latest(exports: Path, folder: Path) -> dict:
    """Point `latest.json` at a release: replaced atomically, the last file a publish writes."""
    package = folder / "datapackage.json"
    latest = {"version": folder.name, "path": f"{RELEASES}/{folder.name}/",
              "datapackage": f"{RELEASES}/{folder.name}/datapackage.json",
              "datapackage_sha256": file_sha256(package),
              "demo_data": json.loads(package.read_text()).get("demo_data", [])}
    write_atomically(exports / LATEST, json.dumps(latest, indent=2, sort_keys=True))
    return latest


def read_latest(exports: Path) -> dict | None:
    try:
        return json.loads((exports / LATEST).read_text())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ReleaseError(f"{exports / LATEST} is not JSON ({exc})") from None


def prune_releases(exports: Path, keep: int = RELEASES_KEEP) -> list[str]:
    """Keep the newest `keep` releases and the one latest.json names; remove the rest. (The
    temporary folder of a publish that died is removed by publish.verify.sweep_temporaries.)"""
    folder = releases_dir(exports)
    if not folder.exists():
        return []
    latest = (read_latest(exports) or {}).get("version")
    releases = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    removed = [v for v in releases[:-keep] if v != latest]
    for version in removed:
        shutil.rmtree(folder / version)
    return removed


def link_flat_copy(folder: Path, exports: Path, names: list[str]) -> None:
    """exports/<table>.parquet: the latest release's files, hard-linked (a copy where links fail),
    each replaced atomically. A convenience for readers who want fixed paths; a reader who needs one
    version across files reads latest.json and its release instead."""
    for name in names:
        source, target = folder / f"{name}.parquet", exports / f"{name}.parquet"
        tmp = tmp_name(target)
        tmp.unlink(missing_ok=True)
        link_or_copy(source, tmp)
        os.replace(tmp, target)

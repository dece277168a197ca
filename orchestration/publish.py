"""Atomic publish of a finished build file, exports, history and rollback (DESIGN §1).

Readers of warehouse/benchmarks.duckdb never see a half-built table: the build file is
checkpointed and closed, audited read-only, copied into history/, then moved over the published
file with os.replace. Nothing here ever opens the published file for writing.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import duckdb

from ingest import config

PUBLISHED_SCHEMAS = ("marts", "site", "audit")
EXPORTED_SCHEMAS = ("marts", "site")  # audit stays in the file only
REQUIRED_TABLES = ("marts.fct_api_prices", "marts.fct_grid_intensity", "audit.quarantine", "audit.build_info")
HISTORY_KEEP = 7


class PublishError(Exception):
    pass


def history_dir() -> Path:
    return config.home() / "history"


def exports_dir() -> Path:
    return config.home() / "exports"


@contextmanager
def home_lock(name: str, log: Callable[[str], None] | None = None) -> Iterator[None]:
    """An exclusive lock file in the warehouse home (serialises refreshes and publishes)."""
    config.home().mkdir(parents=True, exist_ok=True)
    with open(config.home() / f".{name}.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if log:
                log(f"waiting for another {name} to finish")
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def finalize_build(path: Path) -> None:
    """CHECKPOINT and close, so the file is complete on its own (no .wal beside it)."""
    con = duckdb.connect(str(path))
    try:
        con.execute("CHECKPOINT")
    finally:
        con.close()
    if Path(str(path) + ".wal").exists():
        raise PublishError(f"{path.name} still has a write-ahead log after CHECKPOINT")


def table_inventory(con: duckdb.DuckDBPyConnection) -> dict[str, dict]:
    tables = con.execute(
        "SELECT schema_name, table_name, estimated_size FROM duckdb_tables() "
        "WHERE database_name = current_database() ORDER BY 1, 2").fetchall()
    out = {}
    for schema, table, _ in tables:
        cols = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position", [schema, table]).fetchall()
        rows = con.execute(f'SELECT count(*) FROM "{schema}"."{table}"').fetchone()[0]
        out[f"{schema}.{table}"] = {"rows": rows, "columns": [{"name": c, "type": t} for c, t in cols]}
    return out


def audit_build(path: Path) -> dict[str, dict]:
    """Open the build read-only and check it is self-contained and complete."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        views = con.execute("SELECT schema_name || '.' || view_name FROM duckdb_views() "
                            "WHERE NOT internal AND database_name = current_database()").fetchall()
        if views:
            raise PublishError(f"build holds views that would not survive a copy: {views[0][0]}")
        inventory = table_inventory(con)
    finally:
        con.close()
    stray = [t for t in inventory if t.split(".")[0] not in PUBLISHED_SCHEMAS]
    if stray:
        raise PublishError(f"build holds tables outside {', '.join(PUBLISHED_SCHEMAS)}: {stray[0]}")
    missing = [t for t in REQUIRED_TABLES if t not in inventory]
    if missing:
        raise PublishError(f"build lacks required table {missing[0]}")
    return inventory


def read_version(path: Path) -> dict | None:
    if not path.exists():
        return None
    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute("SELECT version, build_started_at, code_revision FROM audit.build_info").fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return {"version": row[0], "build_started_at": str(row[1]), "code_revision": row[2]} if row else None


def publish(build_file: Path, sources_meta: dict, log: Callable[[str], None]) -> dict:
    """Audit, then atomically replace the published file, record history and write exports."""
    build_file = Path(build_file)
    finalize_build(build_file)
    inventory = audit_build(build_file)
    new = read_version(build_file)
    published = config.published_path()
    with home_lock("publish", log):
        current = read_version(published)
        if current and new and new["version"] < current["version"]:
            raise PublishError(f"refusing to replace published {current['version']} with older build {new['version']}")
        history_dir().mkdir(parents=True, exist_ok=True)
        shutil.copy2(build_file, history_dir() / f"{new['version']}.duckdb")
        prune_history()
        os.replace(build_file, published)
        _fsync_dir(published.parent)
        write_exports(published, inventory, new, sources_meta)
    exported = sum(1 for t in inventory if t.split(".")[0] in EXPORTED_SCHEMAS)
    log(f"published {new['version']}: {len(inventory)} tables in the file, {exported} exported as Parquet")
    return {"version": new["version"], "tables": inventory}


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def prune_history(keep: int = HISTORY_KEEP) -> None:
    files = sorted(history_dir().glob("*.duckdb"))
    for old in files[:-keep]:
        old.unlink()


def list_history() -> list[str]:
    return [p.stem for p in sorted(history_dir().glob("*.duckdb"))] if history_dir().exists() else []


def write_exports(published: Path, inventory: dict, version: dict, sources_meta: dict) -> None:
    """Each marts/site table to exports/<table>.parquet, then exports/manifest.json last."""
    out = exports_dir()
    out.mkdir(parents=True, exist_ok=True)
    exported = {t: v for t, v in inventory.items() if t.split(".")[0] in EXPORTED_SCHEMAS}
    names = [t.split(".", 1)[1] for t in exported]
    if len(set(names)) != len(names):
        raise PublishError("two exported tables share a name across schemas")
    con = duckdb.connect(str(published), read_only=True)
    try:
        for table in exported:
            name = table.split(".", 1)[1]
            tmp = out / f".{name}.parquet.tmp"
            schema, tbl = table.split(".", 1)
            con.execute(f"COPY \"{schema}\".\"{tbl}\" TO '{_sql_path(tmp)}' (FORMAT parquet, COMPRESSION zstd)")
            os.replace(tmp, out / f"{name}.parquet")
    finally:
        con.close()
    for stale in out.glob("*.parquet"):
        if stale.stem not in names:
            stale.unlink()
    manifest = {
        "version": version["version"],
        "built_at": version["build_started_at"],
        "exported_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "code_revision": version["code_revision"],
        "tables": {t: {"file": f"{t.split('.', 1)[1]}.parquet", **v} for t, v in exported.items()},
        "sources": sources_meta,
        # sources whose rows come from the bundled offline recordings (demo data, not real)
        "demo_data": sorted(n for n, m in sources_meta.items() if m.get("demo")),
    }
    tmp = out / ".manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    os.replace(tmp, out / "manifest.json")


def rollback(version: str | None, sources_meta: dict, log: Callable[[str], None]) -> str:
    """Restore a version from history/ (default: the one before the published version)."""
    available = list_history()
    if not available:
        raise PublishError("no published versions in history/ to roll back to")
    current = read_version(config.published_path())
    if version is None:
        older = [v for v in available if current is None or v < current["version"]]
        if not older:
            raise PublishError("no version older than the published one in history/")
        version = older[-1]
    elif version not in available:
        raise PublishError(f"unknown version {version}; available: {', '.join(available)}")
    with home_lock("publish", log):
        source = history_dir() / f"{version}.duckdb"
        tmp = config.home() / f".rollback-{version}.duckdb"
        shutil.copy2(source, tmp)
        inventory = audit_build(tmp)
        os.replace(tmp, config.published_path())
        _fsync_dir(config.home())
        write_exports(config.published_path(), inventory, read_version(config.published_path()), sources_meta)
    log(f"rolled back to {version}")
    return version


def clean_abandoned_builds(keep: Path | None = None, log: Callable[[str], None] | None = None) -> int:
    """Remove build files (and their WALs and dbt targets) left by runs that died. Call under the refresh lock."""
    folder = config.home() / "build"
    removed = 0
    if not folder.exists():
        return 0
    for item in folder.iterdir():
        if keep is not None and item.name.startswith(keep.stem):
            continue
        if item.is_dir():
            shutil.rmtree(item, ignore_errors=True)
        else:
            item.unlink(missing_ok=True)
        removed += 1
    if removed and log:
        log(f"cleaned {removed} abandoned build files")
    return removed

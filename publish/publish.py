"""Atomic publish of a finished build file, exports, history and rollback (DESIGN §1).

Readers of warehouse/benchmarks.duckdb never see a half-built table: the build file is
checkpointed and closed, audited read-only, copied into history/, then moved over the published
file with os.replace. Nothing here ever opens the published file for writing.
"""
from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import duckdb

from ingest import config
from ingest.files import fsync_dir, write_atomically
from ingest.locks import home_lock, lock_held
from publish import release
from publish.history import history_dir, list_history, read_version  # noqa: F401 (the module's API)
from publish.verify import (DamagedFile, copy_verified, disk_error, fault, load_index, mark_published, pid_alive,
                            record_in_index, record_inputs, save_index, was_published)

PUBLISHED_SCHEMAS = ("marts", "site", "audit")
DBT_TARGET = "dbt-target"  # build/dbt-target: dbt's target folder of the home's builds
EXPORTED_SCHEMAS = ("marts", "site")  # audit stays in the file only
REQUIRED_TABLES = ("marts.fct_api_prices", "marts.fct_grid_intensity", "audit.quarantine", "audit.build_info")
HISTORY_KEEP = 7


class PublishError(Exception):
    pass


def exports_dir() -> Path:
    return config.home() / "exports"


def finalize_build(path: Path) -> None:
    """Keep only the published schemas, then CHECKPOINT and close, so the file is complete on its
    own (no .wal beside it, no view reading landing files by path). The run's build file is the
    publish's own copy: dbt's file (build/building.duckdb) keeps every layer for a data engineer."""
    con = duckdb.connect(str(path), config=config.duckdb_config())
    try:
        schemas = con.execute(
            "SELECT schema_name FROM duckdb_schemas() WHERE database_name = current_database() "
            "AND NOT internal").fetchall()
        for (schema,) in schemas:
            if schema not in PUBLISHED_SCHEMAS:
                con.execute(f'DROP SCHEMA "{schema}" CASCADE')
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
    con = duckdb.connect(str(path), read_only=True, config=config.duckdb_config())
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


def publish(build_file: Path, sources_meta: dict, log: Callable[[str], None], if_changed: bool = True,
            inputs: str | None = None) -> dict:
    """Audit, then atomically replace the published file, record history and write exports.

    With `if_changed` (what refreshes do), a build whose tables equal the published ones is not
    published: the result says `unchanged` and names the version that stays. `inputs` is the
    fingerprint of what the build read (publish/inputs.py), kept with the version it becomes
    (or equals) so that a refresh with nothing new can skip its build.
    """
    from publish.diff import diff_files

    build_file = Path(build_file)
    finalize_build(build_file)
    inventory = audit_build(build_file)
    new = read_version(build_file)
    published = config.published_path()
    with home_lock("publish", log):
        current = read_version(published)
        if current is None and published.exists():
            log(f"published file {published} is damaged (it does not open): replacing it")
        if current and new and new["version"] < current["version"]:
            raise PublishError(f"refusing to replace published {current['version']} with older build {new['version']}")
        changes = diff_files(published, build_file) if current else None
        if if_changed and changes is not None and not changes["changed"]:
            build_file.unlink()
            if inputs:
                record_inputs(current["version"], inputs)
            if (release.read_latest(exports_dir()) or {}).get("version") != current["version"]:
                # a publish that died after its replace: its release and latest.json are finished now
                write_exports(published, audit_build(published), current, sources_meta)
            log(f"nothing changed: no table differs from published {current['version']}; nothing published")
            return {"version": current["version"], "tables": inventory, "unchanged": True}
        _keep_in_history(build_file, new["version"], inputs)
        prune_history()
        # the release is complete before the published file changes; latest.json names it after
        try:
            release.write_release(build_file, exports_dir(), _exported(inventory), new, sources_meta, changes)
        except OSError as exc:
            raise PublishError(str(disk_error(exc, exports_dir()))) from None
        except duckdb.Error as exc:  # DuckDB's own write error (a full disk says so in its text)
            raise PublishError(f"writing the release in {exports_dir()} failed: {str(exc).splitlines()[0]}") from None
        fault("publish-before-replace")
        os.replace(build_file, published)
        fsync_dir(published.parent)
        mark_published(new["version"])
        write_exports(published, inventory, new, sources_meta, changes)
    exported = sum(1 for t in inventory if t.split(".")[0] in EXPORTED_SCHEMAS)
    log(f"published {new['version']}: {len(inventory)} tables in the file, {exported} exported as Parquet")
    return {"version": new["version"], "tables": inventory}


def _keep_in_history(build_file: Path, version: str, inputs: str | None = None) -> str:
    """The verified copy in history/ (temporary name, fsync, every table read, then rename) and
    its sha256 in history/index.json. The build file itself is fsynced: it becomes the published file."""
    try:
        with open(build_file, "rb+") as fh:
            os.fsync(fh.fileno())
        digest, tables = copy_verified(build_file, history_dir() / f"{version}.duckdb",
                                       fault_point="history-copy")
        record_in_index(version, digest, build_file.stat().st_size, tables, inputs)
    except DamagedFile as exc:
        raise PublishError(str(exc)) from None
    except OSError as exc:
        raise PublishError(str(disk_error(exc, history_dir()))) from None
    return digest


def prune_history(keep: int = HISTORY_KEEP) -> None:
    files = sorted(history_dir().glob("*.duckdb"))
    for old in files[:-keep]:
        old.unlink()
    index = load_index()
    if any(v not in {p.stem for p in files[-keep:]} for v in index):
        kept = {v: e for v, e in index.items() if v in {p.stem for p in files[-keep:]}}
        save_index(kept)


def _exported(inventory: dict) -> dict:
    exported = {t: v for t, v in inventory.items() if t.split(".")[0] in EXPORTED_SCHEMAS}
    names = [t.split(".", 1)[1] for t in exported]
    if len(set(names)) != len(names):
        raise PublishError("two exported tables share a name across schemas")
    return exported


def write_exports(published: Path, inventory: dict, version: dict, sources_meta: dict,
                  changes: dict | None = None) -> None:
    """The release of this version (publish/release.py), the flat convenience copy of its Parquet
    files, exports/manifest.json, then exports/latest.json last.

    `changes` is the diff against the version this one replaced (publish/diff.py), None for
    a first publish or a rollback. A `docs` entry of the previous manifest is kept while the docs
    folder is there (`benchwh docs` regenerates it for the new version).
    """
    out = exports_dir()
    out.mkdir(parents=True, exist_ok=True)
    exported = _exported(inventory)
    names = [t.split(".", 1)[1] for t in exported]
    folder = release.write_release(published, out, exported, version, sources_meta, changes)
    release.link_flat_copy(folder, out, names)
    for stale in out.glob("*.parquet"):
        if stale.stem not in names:
            stale.unlink()
    manifest = {
        "version": version["version"],
        "built_at": version["build_started_at"],
        "exported_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "code_revision": version["code_revision"],
        "release": f"{release.RELEASES}/{version['version']}/",
        "tables": {t: {"file": f"{t.split('.', 1)[1]}.parquet", **v} for t, v in exported.items()},
        "sources": sources_meta,
        "changes": changes,
        # sources whose rows come from the bundled offline recordings (demo data, not real)
        "demo_data": sorted(n for n, m in sources_meta.items() if m.get("demo")),
    }
    if (out / "docs" / "index.html").exists():
        manifest["docs"] = _docs_entry(out)
    # diff keys hold dates
    write_atomically(out / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True, default=str))
    release.write_latest(out, folder)
    release.prune_releases(out)


def _docs_entry(out: Path) -> dict:
    previous = {}
    try:
        previous = json.loads((out / "manifest.json").read_text()).get("docs") or {}
    except (OSError, ValueError):
        pass
    return {"path": "docs/index.html", "generated_for": previous.get("generated_for")}


def rollback(version: str | None, sources_meta: dict, log: Callable[[str], None]) -> str:
    """Restore a version from history/ (default: the newest good one before the published version).

    Each candidate is checked against its recorded sha256 and read in full before it replaces
    anything; a damaged published file (one that does not open) does not stop a rollback.
    """
    index = load_index()
    # a copy kept by a publish killed before its replace was never published: never restored
    available = [v for v in list_history() if was_published(v, index)]
    if not available:
        raise PublishError("no published versions in history/ to roll back to")
    current = read_version(config.published_path())
    if current is None and config.published_path().exists():
        log(f"published file {config.published_path()} is damaged (it does not open)")
    if version is None:
        # damaged or absent current: the newest good version; else the newest good older one
        candidates = [v for v in available if current is None or v < current["version"]]
        if not candidates:
            raise PublishError("no version older than the published one in history/")
    elif version in list_history() and version not in available:
        raise PublishError(f"version {version} was never published (its publish was interrupted before the "
                           f"replace); available: {', '.join(available)}")
    elif version not in available:
        raise PublishError(f"unknown version {version}; available: {', '.join(available)}")
    else:
        candidates = [version]
    with home_lock("publish", log):
        problems = []
        for candidate in reversed(candidates):
            source = history_dir() / f"{candidate}.duckdb"
            try:
                inventory = audit_build(source)
                # copied beside the published file under a temporary name, checked, then renamed
                copy_verified(source, config.published_path(),
                              expect_sha256=index.get(candidate, {}).get("sha256"))
            except (DamagedFile, PublishError, duckdb.Error) as exc:
                problems.append(f"{candidate}: {exc}")
                log(f"history version {candidate} is damaged, skipped: {exc}")
                continue
            except OSError as exc:
                raise PublishError(str(disk_error(exc, config.home()))) from None
            write_exports(config.published_path(), inventory, read_version(config.published_path()), sources_meta)
            log(f"rolled back to {candidate}")
            return candidate
    raise PublishError(f"no good version to roll back to ({problems[0]})" if len(problems) == 1
                       else f"no good version to roll back to: {len(problems)} candidates damaged, newest: {problems[0]}")


def _build_running() -> bool:
    """Whether a dbt build holds the home's build lock (orchestration/dbt_assets.py)."""
    return lock_held("build")


def _spill_owner_alive(name: str) -> bool:
    pid = name[len(config.DUCKDB_TMP_PREFIX):]
    return pid.isdigit() and (int(pid) == os.getpid() or pid_alive(int(pid)))


def clean_abandoned_builds(keep: Path | None = None, log: Callable[[str], None] | None = None) -> int:
    """Remove build files (and their WALs) left by runs that died. Call under the refresh lock.
    dbt's target folder stays (its partial parse serves the next build)."""
    folder = config.home() / "build"
    removed = 0
    if not folder.exists() or _build_running():
        return 0  # a dbt that is still running writes here: never pull files from under it
    for item in folder.iterdir():
        if keep is not None and item.name.startswith(keep.stem):
            continue
        if item.name == DBT_TARGET:
            continue
        if item.name.startswith(config.DUCKDB_TMP_PREFIX) and _spill_owner_alive(item.name):
            continue  # a file-less DuckDB connection's spill folder (config.duckdb_config)
        if item.is_dir():
            shutil.rmtree(item, ignore_errors=True)
        else:
            item.unlink(missing_ok=True)
        removed += 1
    if removed and log:
        log(f"cleaned {removed} abandoned build files")
    return removed

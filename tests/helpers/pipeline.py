"""Run the real `benchwh` console script and read what it published."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

BENCHWH = str(Path(sys.executable).parent / "benchwh")
# Tables whose content names the build itself, not the data.
BUILD_IDENTITY_TABLES = {"audit.build_info"}


def benchwh_env(home: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWH_", "DAGSTER_HOME"))}
    env.update({"BENCHWH_HOME": str(home), "BENCHWH_MAX_RPS": "1000"})
    for var in ("BENCHWH_LOCALSCORE_URL", "BENCHWH_OPENROUTER_URL", "BENCHWH_HF_URL", "BENCHWH_GRID_URL"):
        env[var] = "http://127.0.0.1:9/unset"
    env.update(extra)
    return env


def run_benchwh(home: Path, *args: str, timeout: float = 600, **env_extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([BENCHWH, *args], env=benchwh_env(home, **env_extra), capture_output=True,
                          text=True, timeout=timeout)


def file_sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def table_counts(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() ORDER BY 1, 2").fetchall()
        return {f"{s}.{t}": con.execute(f'SELECT count(*) FROM "{s}"."{t}"').fetchone()[0] for s, t in tables}
    finally:
        con.close()


def row_hashes(db: Path) -> dict[str, list[str]]:
    """Per table, the sorted hashes of every row (identical contents give identical lists)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() ORDER BY 1, 2").fetchall()
        out = {}
        for s, t in tables:
            name = f"{s}.{t}"
            if name in BUILD_IDENTITY_TABLES:
                continue
            rows = con.execute(f'SELECT md5(CAST(r AS VARCHAR)) FROM (SELECT * FROM "{s}"."{t}") r').fetchall()
            out[name] = sorted(r[0] for r in rows)
        return out
    finally:
        con.close()


def user_added_sources(root: Path) -> list[str]:
    """Sources scaffolded in this tree but not part of the project (untracked by git)."""
    proc = subprocess.run(["git", "-C", str(root), "ls-files", "--others", "--exclude-standard", "ingest/sources"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return []
    return sorted(Path(p).stem for p in proc.stdout.split() if p.endswith(".py") and not Path(p).stem.startswith("_"))


def copy_project(root: Path, target: Path, ignore) -> None:
    """Copy the project for a test, without the sources a user scaffolded in their own tree."""
    import shutil

    added = user_added_sources(root)
    scaffolded = {root / "ingest" / "sources" / f"{n}.py" for n in added}
    scaffolded |= {root / "tests" / f"test_source_{n}.py" for n in added}
    scaffolded |= {root / folder / n for n in added
                   for folder in ("ingest/snapshots", "dbt_project/models/staging", "dbt_project/models/marts")}

    def skip(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        return set(ignore(folder, names)) | {n for n in names if here / n in scaffolded}

    shutil.copytree(root, target, ignore=skip)


def make_build(home: Path, version: str) -> Path:
    """A build file: a copy of the published warehouse renamed to `version`."""
    build = home / "build" / f"{version}.duckdb"
    build.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(home / "benchmarks.duckdb", build)
    con = duckdb.connect(str(build))
    con.execute("UPDATE audit.build_info SET version = ?", [version])
    con.close()
    return build


def site_exports_only(warehouse: Path, target: Path) -> Path:
    """A folder holding the published site tables' Parquet files and the manifest, nothing else:
    what a downstream site reads."""
    target.mkdir(parents=True)
    manifest = json.loads((warehouse / "exports" / "manifest.json").read_text())
    for table, meta in manifest["tables"].items():
        if table.startswith("site."):
            shutil.copy(warehouse / "exports" / meta["file"], target / meta["file"])
    shutil.copy(warehouse / "exports" / "manifest.json", target / "manifest.json")
    return target

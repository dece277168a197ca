"""Run the real `benchwh` console script and read what it published."""
from __future__ import annotations

import hashlib
import os
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

"""The published versions a home keeps: what a file holds, and the history folder. No other
publish module is imported here, so diff, verify and publish all read versions the same way."""
from __future__ import annotations

from pathlib import Path

import duckdb

from ingest import config


def history_dir() -> Path:
    return config.home() / "history"


def read_version(path: Path) -> dict | None:
    """The version a file holds; None when absent or unreadable (a damaged file names no version)."""
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True, config=config.duckdb_config())
    except duckdb.Error:
        return None
    try:
        row = con.execute("SELECT version, build_started_at, code_revision FROM audit.build_info").fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return {"version": row[0], "build_started_at": str(row[1]), "code_revision": row[2]} if row else None


def list_history() -> list[str]:
    return [p.stem for p in sorted(history_dir().glob("*.duckdb"))] if history_dir().exists() else []

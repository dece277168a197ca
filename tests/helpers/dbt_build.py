"""Run the real dbt project on a test's own landing files, and read what it built."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb

from tests.helpers.paths import PROJECT_ROOT as PROJECT

DBT = str(Path(sys.executable).parent / "dbt")


def dbt_build(home: Path, work: Path, select: list[str], *extra: str, timeout: float = 900) -> Path:
    """Build the selected models (with their data and unit tests) into a new DuckDB file under work/."""
    build = work / "build.duckdb"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHWH_")}
    env.update(BENCHWH_HOME=str(home), BENCHWH_BUILD_PATH=str(build), DBT_SEND_ANONYMOUS_USAGE_STATS="false")
    cmd = [DBT, "build", "--project-dir", str(PROJECT / "dbt_project"),
           "--profiles-dir", str(PROJECT / "dbt_project"),
           "--target-path", str(work / "target"), "--log-path", str(work / "logs"),
           *extra, "--select", *select]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-4000:]
    return build


def query(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()

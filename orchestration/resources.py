"""Resources and the paths a run uses: dbt beside this interpreter, the per-run build file."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from dagster_dbt import DbtCliResource

from ingest import config

DBT_PROJECT_DIR = config.dbt_project_dir()
MANIFEST_PATH = DBT_PROJECT_DIR / "target" / "manifest.json"


def dbt_executable() -> str:
    """The dbt installed beside this interpreter: works without an activated venv."""
    candidate = Path(sys.executable).parent / "dbt"
    return str(candidate) if candidate.exists() else "dbt"


def guarded_dbt_executable() -> str:
    """`benchwh-dbt` (cli/dbt_guard.py): dbt that dies with this process; plain dbt without it."""
    candidate = Path(sys.executable).parent / "benchwh-dbt"
    return str(candidate) if candidate.exists() else dbt_executable()


def dbt_resource() -> DbtCliResource:
    return DbtCliResource(project_dir=str(DBT_PROJECT_DIR), profiles_dir=str(DBT_PROJECT_DIR),
                          dbt_executable=guarded_dbt_executable())


def build_dir() -> Path:
    return config.home() / "build"


def build_path(run_id: str) -> Path:
    return build_dir() / f"{run_id}.duckdb"


def dbt_env() -> dict[str, str]:
    return {**os.environ, "BENCHWH_HOME": str(config.home()), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}


def _project_files_newer_than(path: Path) -> bool:
    if not path.exists():
        return True
    stamp = path.stat().st_mtime
    for folder in ("models", "macros", "seeds", "tests"):
        for f in (DBT_PROJECT_DIR / folder).rglob("*"):
            if f.is_file() and f.stat().st_mtime > stamp:
                return True
    return any((DBT_PROJECT_DIR / n).stat().st_mtime > stamp for n in ("dbt_project.yml", "profiles.yml"))


def ensure_manifest() -> Path:
    """Run `dbt parse` when the manifest is missing or older than the project (Dagster needs it to load)."""
    if not _project_files_newer_than(MANIFEST_PATH):
        return MANIFEST_PATH
    MANIFEST_PATH.parent.mkdir(parents=True, exist_ok=True)
    with open(MANIFEST_PATH.parent / ".parse.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _project_files_newer_than(MANIFEST_PATH):
            from cli.progress import progress
            progress("dbt: parsing the project (its files changed since the last parse)")
            proc = subprocess.run(
                [dbt_executable(), "parse", "--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir",
                 str(DBT_PROJECT_DIR), "--quiet"],
                env=dbt_env(), capture_output=True, text=True,
            )
            if proc.returncode != 0:
                detail = (proc.stdout + proc.stderr).strip().splitlines()
                raise RuntimeError("dbt parse failed: " + (detail[-1] if detail else "no output"))
            os.utime(MANIFEST_PATH)
    return MANIFEST_PATH

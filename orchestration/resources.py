"""Resources and the paths a run uses: dbt beside this interpreter, the per-run build file (the
manifest: orchestration/manifest.py)."""
from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

from dagster_dbt import DbtCliResource
from packaging import version

from ingest import config
from orchestration.dbt_state import build_dir
from orchestration.manifest import DBT_PROJECT_DIR


def dbt_executable() -> str:
    """The dbt installed beside this interpreter: works without an activated venv."""
    candidate = Path(sys.executable).parent / "dbt"
    return str(candidate) if candidate.exists() else "dbt"


def guarded_dbt_executable() -> str:
    """`benchwh-dbt` (cli/dbt_guard.py): dbt that dies with this process; plain dbt without it."""
    candidate = Path(sys.executable).parent / "benchwh-dbt"
    return str(candidate) if candidate.exists() else dbt_executable()


class BenchDbtCliResource(DbtCliResource):
    """dagster-dbt's resource without two start-up costs of every build (about 3 s together):
    it ran `dbt --version` in a subprocess to learn the version of the dbt beside this interpreter
    (the installed dbt-core's), and loaded the profile and the DuckDB adapter in this process for
    row counts and column metadata, which no asset here asks for."""

    @property
    def _cli_version(self) -> version.Version:
        return version.parse(metadata.version("dbt-core"))

    def _initialize_dbt_core_adapter(self, args):
        return None


def dbt_resource() -> DbtCliResource:
    return BenchDbtCliResource(project_dir=str(DBT_PROJECT_DIR), profiles_dir=str(DBT_PROJECT_DIR),
                               dbt_executable=guarded_dbt_executable())


def build_path(run_id: str) -> Path:
    return build_dir() / f"{run_id}.duckdb"


def dbt_env() -> dict[str, str]:
    return {**os.environ, "BENCHWH_HOME": str(config.home()), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}

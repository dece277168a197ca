"""Resources and the paths a run uses: the dbt resource (orchestration/dbt_cli.py), the per-run
build file (the manifest: orchestration/manifest.py)."""
from __future__ import annotations

import os
from pathlib import Path

from ingest import config
from orchestration.dbt_cli import BenchDbtCliResource, DbtCliResource, guarded_dbt_executable
from orchestration.dbt_state import DBT_NO_TRACKING, build_dir
from orchestration.manifest import DBT_PROJECT_DIR


def dbt_resource() -> DbtCliResource:
    return BenchDbtCliResource(project_dir=str(DBT_PROJECT_DIR), profiles_dir=str(DBT_PROJECT_DIR),
                               dbt_executable=guarded_dbt_executable())


def build_path(run_id: str) -> Path:
    return build_dir() / f"{run_id}.duckdb"


def dbt_env() -> dict[str, str]:
    return {**os.environ, "BENCHWH_HOME": str(config.home()), **DBT_NO_TRACKING}

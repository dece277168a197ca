"""Resources and the paths a run uses: the stock dagster-dbt resource, and the per-run build file."""
from __future__ import annotations

import sys
from pathlib import Path

from dagster_dbt import DbtCliResource

from ingest import config
from orchestration.manifest import DBT_PROJECT
from publish.publish import DBT_TARGET


def dbt_executable() -> str:
    """`benchwh-dbt` (cli/dbt_exec.py): the stock dbt, killed when the process that started it dies;
    plain dbt beside this interpreter without it (works without an activated venv)."""
    for name in ("benchwh-dbt", "dbt"):
        candidate = Path(sys.executable).parent / name
        if candidate.exists():
            return str(candidate)
    return "dbt"


def dbt_resource() -> DbtCliResource:
    return DbtCliResource(project_dir=DBT_PROJECT, dbt_executable=dbt_executable())


def build_dir() -> Path:
    return config.home() / "build"


def build_path(run_id: str) -> Path:
    """The run's build file: dbt's file (build/building.duckdb) renamed once dbt has exited."""
    return build_dir() / f"{run_id}.duckdb"


def building_path() -> Path:
    """Where dbt writes (dbt_project/profiles.yml): one stable path per home keeps dbt's partial parse."""
    return build_dir() / "building.duckdb"


def dbt_target_dir() -> Path:
    """dbt's target folder for the home's builds: one per home, so dbt keeps its own partial parse."""
    return build_dir() / DBT_TARGET

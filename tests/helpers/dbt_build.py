"""Run the real dbt project on a test's own landing files, and read what it built."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import duckdb

from tests.helpers.paths import PROJECT_ROOT as PROJECT

BUILDING = Path("build") / "building.duckdb"  # the profile's build file, in the home


def dbt_build(home: Path, work: Path, select: list[str], *extra: str, timeout: float = 900,
              dbt: list[str] | None = None) -> Path:
    """Build the selected models with their data tests as a refresh runs dbt: the stock dbt with the
    home's BENCHWH_HOME and target folder; the build file is then moved to work/build.duckdb. Not dbt's unit tests:
    they read their own fixtures, not this landing, and the shared offline build runs every one of
    them (test_refresh_offline.py::test_dbt_unit_tests_all_ran_in_the_ci_build). `dbt`: the
    command that runs dbt, else the stock dbt."""
    done = _dbt(home, work, select, *extra, logs=work / "logs", timeout=timeout, dbt=dbt)
    assert done.returncode == 0, done.stdout[-4000:]
    build = work / "build.duckdb"
    os.replace(home / BUILDING, build)
    return build


def failed_dbt_build(home: Path, work: Path, select: list[str], *extra: str, timeout: float = 900,
                     project: Path = PROJECT / "dbt_project", dbt: list[str] | None = None) -> str:
    """Build as dbt_build does, expecting it to fail: the one-line reason a refresh would give
    (orchestration's first_dbt_failure), read from dbt's printed output as a refresh keeps it.
    `project`: an edited copy of the dbt project (parsed again), else the project itself;
    `dbt`: the command that runs dbt, else the stock dbt."""
    from orchestration.dbt_assets import first_dbt_failure  # imports Dagster: only here

    done = _dbt(home, work, select, "--log-format", "json", *extra, logs=work / "logs", timeout=timeout,
                project=project, dbt=dbt)
    assert done.returncode != 0, done.stdout[-4000:]
    (home / BUILDING).unlink(missing_ok=True)
    output = work / "dbt-output.log"
    output.write_text(done.stdout, encoding="utf-8")
    return first_dbt_failure(target_dir(home, project), output)


def dbt_env(home: Path) -> dict[str, str]:
    """What a refresh runs dbt with: the home, and none of the caller's BENCHWH_ or DBT_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWH_", "DBT_"))}
    env.update(BENCHWH_HOME=str(home), DBT_SEND_ANONYMOUS_USAGE_STATS="false")
    return env


def target_dir(home: Path, project: Path = PROJECT / "dbt_project") -> Path:
    """One dbt target folder per home (and project copy), so dbt's own partial parse serves the next build."""
    return home / "build" / ("dbt-target" if project == PROJECT / "dbt_project" else f"dbt-target-{project.name}")


def _dbt(home: Path, work: Path, select: list[str], *extra: str, logs: Path, timeout: float,
         project: Path = PROJECT / "dbt_project", dbt: list[str] | None = None):
    (home / "build").mkdir(parents=True, exist_ok=True)
    (home / BUILDING).unlink(missing_ok=True)
    if dbt is None:
        from orchestration.resources import dbt_executable

        dbt = [dbt_executable()]
    cmd = [*dbt, "build", "--project-dir", str(project), "--profiles-dir", str(project),
           "--target-path", str(target_dir(home, project)), "--log-path", str(logs),
           "--exclude-resource-type", "unit_test", *extra, "--select", *select]
    return subprocess.run(cmd, env=dbt_env(home), capture_output=True, text=True, timeout=timeout, cwd=project)


def query(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()

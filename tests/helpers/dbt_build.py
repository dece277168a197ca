"""Run the real dbt project on a test's own landing files, and read what it built."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import duckdb

from orchestration.dbt_state import BUILDING_IN_HOME, DBT_BUILD_ENV, move_build, remove_building, reuse_parse
from tests.helpers.paths import PROJECT_ROOT as PROJECT


def dbt_build(home: Path, work: Path, select: list[str], *extra: str, timeout: float = 900,
              dbt: list[str] | None = None) -> Path:
    """Build the selected models with their data tests as a refresh runs dbt: in the home, from the
    install's parse state; the build file is then moved to work/build.duckdb. Not dbt's unit tests:
    they read their own fixtures, not this landing, and the shared offline build runs every one of
    them (test_refresh_offline.py::test_dbt_unit_tests_all_ran_in_the_ci_build). `dbt`: the
    command that runs dbt, else benchwh-dbt."""
    done = _dbt(home, work, select, *extra, logs=work / "logs", timeout=timeout, dbt=dbt)
    assert done.returncode == 0, done.stdout[-4000:]
    build = work / "build.duckdb"
    move_build(home / BUILDING_IN_HOME, build)
    return build


def failed_dbt_build(home: Path, work: Path, select: list[str], *extra: str, timeout: float = 900,
                     project: Path = PROJECT / "dbt_project", dbt: list[str] | None = None) -> str:
    """Build as dbt_build does, expecting it to fail: the one-line reason a refresh would give
    (orchestration's first_dbt_failure), read from dbt's printed output as a refresh keeps it.
    `project`: an edited copy of the dbt project (parsed again), else the project itself;
    `dbt`: the command that runs dbt, else benchwh-dbt."""
    from orchestration.dbt_assets import first_dbt_failure  # imports Dagster: only here

    done = _dbt(home, work, select, "--log-format", "json", *extra, logs=work / "logs", timeout=timeout,
                project=project, dbt=dbt)
    assert done.returncode != 0, done.stdout[-4000:]
    remove_building(home / BUILDING_IN_HOME)
    output = work / "dbt-output.log"
    output.write_text(done.stdout, encoding="utf-8")
    return first_dbt_failure(work / "target", output)


def refresh_dbt_env(home: Path, target: Path) -> dict[str, str]:
    """What a refresh runs dbt with (benchwh-dbt runs it in `home`, the build's paths relative to
    it): the home's build/ folder, the home's kept parse (else the install's) in `target`, and an
    environment with none of the caller's BENCHWH_ or DBT_ settings and no file log (DBT_BUILD_ENV)."""
    (home / BUILDING_IN_HOME).parent.mkdir(parents=True, exist_ok=True)
    reuse_parse(target, home / "dbt-state")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWH_", "DBT_"))}
    env.update(BENCHWH_HOME=str(home), **DBT_BUILD_ENV)
    return env


def _dbt(home: Path, work: Path, select: list[str], *extra: str, logs: Path, timeout: float,
         project: Path = PROJECT / "dbt_project", dbt: list[str] | None = None):
    remove_building(home / BUILDING_IN_HOME)
    env = refresh_dbt_env(home, work / "target")
    if dbt is None:  # as the orchestration runs dbt builds: through benchwh-dbt (cli/dbt_guard.py)
        from orchestration.dbt_cli import guarded_dbt_executable

        dbt = [guarded_dbt_executable()]
    cmd = [*dbt, "build", "--project-dir", str(project), "--profiles-dir", str(project),
           "--target-path", str(work / "target"), "--log-path", str(logs),
           "--exclude-resource-type", "unit_test", *extra, "--select", *select]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=home)


def query(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def parsed_project():
    """The project as `make manifest` parsed it (dbt's real Manifest), before any map is built."""
    from dbt.contracts.graph.manifest import Manifest
    from dbt.parser.manifest import extended_mashumuro_decoder

    from orchestration.dbt_state import PARSE_STATE, install_parse_state

    manifest = Manifest.from_msgpack((install_parse_state() / PARSE_STATE).read_bytes(),
                                     decoder=extended_mashumuro_decoder)
    manifest.parent_map = manifest.child_map = manifest.group_map = None
    return manifest

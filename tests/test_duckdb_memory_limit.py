"""BENCHWH_DUCKDB_MEMORY_LIMIT: one DuckDB memory limit for the dbt build, publish and the benchmark
floor (issue 17, memory goal). The floor's side is checked in tests/test_benchmark.py, bad values in
tests/test_settings.py."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import duckdb
import yaml

from ingest import config
from orchestration.resources import dbt_executable
from publish import publish as pub
from tests.helpers.dbt_build import dbt_env
from tests.helpers.paths import PROJECT_ROOT as PROJECT

DBT = dbt_executable()  # dbt as the pipeline runs it
PROFILES = PROJECT / "dbt_project" / "profiles.yml"
SHOW_SETTINGS = ("select current_setting('memory_limit') as memory_limit, "
                 "current_setting('preserve_insertion_order') as preserve_insertion_order")


def duckdb_says(limit: str) -> str:
    """How DuckDB itself reports a memory_limit (e.g. 700MB -> '667.5 MiB')."""
    con = duckdb.connect(config={"memory_limit": limit})
    try:
        return con.execute("select current_setting('memory_limit')").fetchone()[0]
    finally:
        con.close()


def dbt_settings(tmp_path: Path, **env_extra: str) -> dict:
    """memory_limit and preserve_insertion_order of dbt's own DuckDB connection (target build), through
    a real `dbt show` (`--quiet` still prints the table), with the environment a refresh gives dbt."""
    home = tmp_path / "home"
    home.mkdir(parents=True)  # a new home: benchwh-dbt makes its build folder
    env = {**dbt_env(home), **env_extra}
    done = subprocess.run(
        [DBT, "show", "--inline", SHOW_SETTINGS, "--output", "json",
         "--quiet", "--project-dir", str(PROJECT / "dbt_project"), "--profiles-dir", str(PROJECT / "dbt_project"),
         "--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")],
        env=env, capture_output=True, text=True, timeout=600, cwd=PROJECT / "dbt_project")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "{" in done.stdout, f"dbt show printed no table: {done.stdout[-3000:]!r} {done.stderr[-2000:]!r}"
    return json.loads(done.stdout[done.stdout.index("{"):])["show"][0]


def test_the_profile_default_is_the_settings_default():
    # the profile cannot import ingest/config.py, so it repeats the literal: they must agree
    options = yaml.safe_load(PROFILES.read_text())["benchwh"]["outputs"]["build"]["config_options"]
    match = re.fullmatch(r"\{\{ env_var\('BENCHWH_DUCKDB_MEMORY_LIMIT', '([^']*)'\) \}\}", options["memory_limit"])
    assert match, options["memory_limit"]
    assert match.group(1) == config.DUCKDB_MEMORY_LIMIT_DEFAULT
    threads = yaml.safe_load(PROFILES.read_text())["benchwh"]["outputs"]["build"]["threads"]
    match = re.fullmatch(r"\{\{ env_var\('BENCHWH_DBT_THREADS', '(\d+)'\) \| as_number \}\}", threads)
    assert match, threads
    assert int(match.group(1)) == config.DBT_THREADS_DEFAULT


def test_dbt_builds_under_the_setting_and_its_default(tmp_path):
    chosen = dbt_settings(tmp_path / "set", BENCHWH_DUCKDB_MEMORY_LIMIT="700MB", BENCHWH_DBT_THREADS="1")
    assert chosen["memory_limit"] == duckdb_says("700MB")
    assert "Concurrency: 1 threads" in (tmp_path / "set" / "logs" / "dbt.log").read_text()
    # the profile's other database option, given at connect as memory_limit is (config_options)
    assert chosen["preserve_insertion_order"] is False
    assert dbt_settings(tmp_path / "default")["memory_limit"] == duckdb_says(config.DUCKDB_MEMORY_LIMIT_DEFAULT)
    assert f"Concurrency: {config.DBT_THREADS_DEFAULT} threads" in (tmp_path / "default" / "logs" / "dbt.log").read_text()


def test_publish_connections_take_the_setting(home, monkeypatch):
    monkeypatch.setenv("BENCHWH_DUCKDB_MEMORY_LIMIT", "700MB")
    db = home / "x.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema audit; create table audit.build_info as select 'v1' as version, "
                "timestamp '2026-01-01' as build_started_at, 'r' as code_revision")
    con.close()
    con = duckdb.connect(str(db), read_only=True, config=config.duckdb_config())
    try:
        assert con.execute("select current_setting('memory_limit')").fetchone()[0] == duckdb_says("700MB")
        # DuckDB refuses a second connection to an open file with another configuration (read_version
        # would say None): publish opens it with the same one
        assert pub.read_version(db)["version"] == "v1"
    finally:
        con.close()


def test_a_file_less_connection_spills_under_the_home_and_cleans_up(home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # DuckDB's own default would be ./.tmp
    monkeypatch.setenv("BENCHWH_DUCKDB_MEMORY_LIMIT", "32MB")
    settings = config.duckdb_config(file_less=True)
    spill = Path(settings["temp_directory"])
    assert spill == home / "build" / f"{config.DUCKDB_TMP_PREFIX}{os.getpid()}"
    con = duckdb.connect(config={**settings, "threads": 1})
    try:
        # a sort of ~100 MB of text under a 32 MB limit has to spill
        con.execute("create table t as select md5(range::varchar) || md5((range + 1)::varchar) s "
                    "from range(1000000)")
        assert con.execute("select count(*) from (select s from t order by s offset 10)").fetchone()[0] > 0
        assert any(spill.iterdir())
        # a refresh cleaning abandoned builds leaves a live process's spill folder alone
        pub.clean_abandoned_builds()
        assert spill.is_dir()
    finally:
        con.close()
    assert not spill.exists() and not (tmp_path / ".tmp").exists()


def test_a_dead_process_spill_folder_is_cleaned(home):
    dead = home / "build" / f"{config.DUCKDB_TMP_PREFIX}999999999"
    dead.mkdir(parents=True)
    pub.clean_abandoned_builds()
    assert not dead.exists()

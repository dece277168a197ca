"""Paths and settings read from the environment (names pinned in DESIGN §3)."""
from __future__ import annotations

import os
import re
from pathlib import Path

USER_AGENT = "benchwh/0.1 (Bench Warehouse; +https://github.com/bench-warehouse/bench-warehouse)"

DEFAULT_URLS = {
    "localscore": "https://www.localscore.ai",
    "openrouter": "https://openrouter.ai/api/v1",
    "huggingface": "https://huggingface.co",
    # Our World in Data's export of Ember's yearly electricity data (CC BY 4.0).
    "grid": "https://ourworldindata.org/grapher/carbon-intensity-electricity.csv",
}
URL_ENV = {
    "localscore": "BENCHWH_LOCALSCORE_URL",
    "openrouter": "BENCHWH_OPENROUTER_URL",
    "huggingface": "BENCHWH_HF_URL",
    "grid": "BENCHWH_GRID_URL",
}


def home() -> Path:
    """The warehouse home: env BENCHWH_HOME, default ./warehouse, always absolute."""
    return Path(os.environ.get("BENCHWH_HOME") or "warehouse").expanduser().resolve()


def source_url(source: str) -> str:
    env = URL_ENV.get(source)
    value = os.environ.get(env) if env else None
    return (value or DEFAULT_URLS[source]).rstrip("/")


class SettingError(ValueError):
    """A bad environment setting: the message names the variable and what is allowed."""


def max_rps() -> float:
    value = os.environ.get("BENCHWH_MAX_RPS")
    if not value:
        return 1.0
    try:
        rps = float(value)
    except ValueError:
        rps = float("nan")
    if not (rps > 0 and rps != float("inf")):  # also rejects nan
        raise SettingError(f"BENCHWH_MAX_RPS={value!r}: expected a positive number of requests "
                           "per second per host, such as 0.5 or 2 (default 1)")
    return rps


EXECUTORS = ("multiprocess", "in_process")
ENGINES = ("duckdb", "spark")


def executor() -> str:
    """How `benchwh refresh` runs the job (env BENCHWH_EXECUTOR): in_process (default) or multiprocess
    (a process per step, sources side by side; docs/scale-out.md says when it pays)."""
    return os.environ.get("BENCHWH_EXECUTOR") or "in_process"


def max_concurrent() -> int:
    """Steps the multiprocess executor runs at once (env BENCHWH_MAX_CONCURRENT, default the CPUs)."""
    value = os.environ.get("BENCHWH_MAX_CONCURRENT")
    if not value:
        return os.cpu_count() or 2
    if not value.isdigit() or int(value) < 1:
        raise SettingError(f"BENCHWH_MAX_CONCURRENT={value!r}: expected a whole number of steps at once, "
                           "1 or more (default the number of CPUs)")
    return int(value)


# DuckDB's memory limit for every connection that does heavy work (the dbt build, publish, the
# benchmark floor); beyond it DuckDB spills to disk. DuckDB's own default is 80% of RAM, which
# lets one query pass DESIGN §8's 2 GB. dbt_project/profiles.yml repeats this default (a
# profile cannot import it; tests/test_duckdb_memory_limit.py checks that they agree).
DUCKDB_MEMORY_LIMIT_DEFAULT = "1GB"
DUCKDB_MEMORY_LIMIT_ENV = "BENCHWH_DUCKDB_MEMORY_LIMIT"
DUCKDB_TMP_PREFIX = "duckdb-tmp-"  # + pid: a file-less connection's spill folder under build/
_MEMORY = re.compile(r"(\d+(?:\.\d+)?) ?(KB|MB|GB|TB|KiB|MiB|GiB|TiB|%)", re.IGNORECASE)


def duckdb_memory_limit() -> str:
    """DuckDB's memory_limit (env BENCHWH_DUCKDB_MEMORY_LIMIT, default 1GB): a size such as 1.5GB or
    800MiB, or a share of RAM such as 50%."""
    value = os.environ.get(DUCKDB_MEMORY_LIMIT_ENV)
    if not value:
        return DUCKDB_MEMORY_LIMIT_DEFAULT
    match = _MEMORY.fullmatch(value)
    if not match or float(match.group(1)) <= 0 or (match.group(2) == "%" and float(match.group(1)) > 100):
        raise SettingError(f"{DUCKDB_MEMORY_LIMIT_ENV}={value!r}: expected a positive size with its unit, "
                           f"such as 1.5GB, 800MB or 2GiB, or a share of RAM such as 50% "
                           f"(default {DUCKDB_MEMORY_LIMIT_DEFAULT})")
    return value


# dbt's threads on DuckDB: nodes built at once. They share one memory limit, so where data and not
# dbt's fixed cost dominates (scale 10: two window sorts of 10M samples side by side ran out of
# 1 GB), 1 builds in the same time, as each DuckDB query already uses every core
# (docs/benchmarks.md). dbt_project/profiles.yml repeats this default.
DBT_THREADS_DEFAULT = 2
DBT_THREADS_ENV = "BENCHWH_DBT_THREADS"


def dbt_threads() -> int:
    """dbt's threads on DuckDB (env BENCHWH_DBT_THREADS, default 2)."""
    value = os.environ.get(DBT_THREADS_ENV)
    if not value:
        return DBT_THREADS_DEFAULT
    if not value.isdigit() or int(value) < 1:
        raise SettingError(f"{DBT_THREADS_ENV}={value!r}: expected a whole number of dbt nodes built at once, "
                           f"1 or more (default {DBT_THREADS_DEFAULT})")
    return int(value)


def duckdb_config(home_dir: Path | None = None, file_less: bool = False) -> dict[str, str]:
    """The `config` of a DuckDB connection that does heavy work. A file's connection spills next to
    its file (`<file>.tmp`); a file-less one would spill to ./.tmp, outside the home, so it gets a
    folder of its own process under build/ (DuckDB removes it on close)."""
    settings = {"memory_limit": duckdb_memory_limit()}
    if file_less:
        build = Path(home_dir or home()) / "build"
        build.mkdir(parents=True, exist_ok=True)  # DuckDB makes the folder, not its parents
        settings["temp_directory"] = str(build / f"{DUCKDB_TMP_PREFIX}{os.getpid()}")
    return settings


def engine() -> str:
    """The dbt engine of a refresh (env BENCHWH_ENGINE): duckdb (default) or spark."""
    return os.environ.get("BENCHWH_ENGINE") or "duckdb"


def spark_dir(run_id: str, home_dir: Path | None = None) -> Path:
    """A Spark build's warehouse (Parquet tables, metastore) under the home: build/<run id>-spark."""
    return Path(home_dir or home()) / "build" / f"{run_id}-spark"


def _folder_problem(variable: str, path: Path) -> str | None:
    """Why `path` cannot be (or become) a folder, or None."""
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                where = "is a file" if p == path else f"lies under {p}, which is a file"
                return f"{variable}={str(path)!r} {where}; expected a folder (or a path where one can be made)"
            if not os.access(p, os.W_OK | os.X_OK):
                return f"{variable}={str(path)!r}: {p} is not writable; expected a folder you can write to"
            return None
    return None


LOCK_WAIT_S_DEFAULT = 3600.0


def lock_wait_s() -> float:
    """How long a refresh waits for another (env BENCHWH_LOCK_WAIT_S, seconds; default 3600)."""
    value = os.environ.get("BENCHWH_LOCK_WAIT_S")
    if not value:
        return LOCK_WAIT_S_DEFAULT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise SettingError(f"BENCHWH_LOCK_WAIT_S={value!r}: expected seconds, 0 or more")
    return seconds


def check_settings() -> list[str]:
    """Every bad environment setting, one line each (checked before any work starts)."""
    problems = []
    try:
        max_rps()
    except SettingError as exc:
        problems.append(str(exc))
    problem = _folder_problem("BENCHWH_HOME", home())
    if problem:
        problems.append(problem)
    if os.environ.get("DAGSTER_HOME"):
        problem = _folder_problem("DAGSTER_HOME", Path(os.environ["DAGSTER_HOME"]).expanduser().resolve())
        if problem:
            problems.append(problem)
    for check in (max_concurrent, duckdb_memory_limit, dbt_threads, lock_wait_s):
        try:
            check()
        except SettingError as exc:
            problems.append(str(exc))
    for env, name, known in (("BENCHWH_EXECUTOR", executor(), EXECUTORS), ("BENCHWH_ENGINE", engine(), ENGINES)):
        if name not in known:
            problems.append(f"{env}={name!r}: expected one of {', '.join(known)}")
    for env in URL_ENV.values():
        value = os.environ.get(env)
        if value and not value.startswith(("http://", "https://")):
            problems.append(f"{env}={value!r}: expected an http:// or https:// URL")
    for env in ("BENCHWH_DEBUG", "BENCHWH_DBT_UNIT_TESTS"):
        value = os.environ.get(env)
        if value not in (None, "", "0", "1"):
            problems.append(f"{env}={value!r}: expected 1 (on) or 0 / unset (off)")
    return problems


def fetch_deadline_s() -> float:
    """The longest one HTTP request may take, body included (env BENCHWH_FETCH_DEADLINE_S)."""
    return float(os.environ.get("BENCHWH_FETCH_DEADLINE_S") or 300)


def raw_dir(home_dir: Path | None = None) -> Path:
    """The raw store of the warehouse home (`home_dir`, default home())."""
    return Path(home_dir or home()) / "raw"


def landing_dir(home_dir: Path | None = None) -> Path:
    """The landing area of the warehouse home (`home_dir`, default home())."""
    return Path(home_dir or home()) / "landing"


def published_path() -> Path:
    return home() / "benchmarks.duckdb"


def project_root() -> Path:
    return Path(__file__).resolve().parent.parent


def dbt_project_dir() -> Path:
    return project_root() / "dbt_project"


def snapshots_dir() -> Path:
    """Bundled recorded snapshots (written by this project, in the sources' real formats)."""
    return Path(__file__).resolve().parent / "snapshots"

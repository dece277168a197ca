"""What every step of a refresh run does first (die with the run process) and which dbt engine it
builds on (DuckDB, or Spark through dbt-spark: `BENCHWH_ENGINE` or the run's `benchwh/engine` tag)."""
from __future__ import annotations

import os
import select
import signal
import threading

from ingest import config
from ingest.config import ENGINES, engine

_watched_by: int | None = None  # the step process whose watcher runs (a fork starts with none)


def die_with_run_process() -> None:
    """In a step process of the multiprocess executor: SIGKILL itself when the process that runs the
    job exits, so a killed `benchwh refresh` takes its steps (and their dbt, cli/dbt_exec.py) with
    it. The step watches the run process through a pidfd, which cannot name another process that
    reuses the pid (a parent-death signal would follow the thread that started the step)."""
    global _watched_by
    expected = os.environ.get("BENCHWH_RUN_PID")
    if not expected or int(expected) == os.getpid() or _watched_by == os.getpid():
        return  # in-process: nothing to follow; or already watching
    try:
        run_process = os.pidfd_open(int(expected))
    except ProcessLookupError:
        os._exit(137)  # the run process died before this step started
    except (OSError, AttributeError):
        return  # no pidfd here (not Linux >= 5.3): the step runs to its end
    threading.Thread(target=_die_when_gone, args=(run_process,), name="die-with-run", daemon=True).start()
    _watched_by = os.getpid()


def _die_when_gone(pidfd: int) -> None:
    select.select([pidfd], [], [])  # readable once the process has exited
    os.kill(os.getpid(), signal.SIGKILL)


def step_engine(tags: dict) -> str:
    """The dbt engine of a run: its `benchwh/engine` tag, else BENCHWH_ENGINE (default duckdb)."""
    from orchestration.tags import ENGINE_TAG

    name = tags.get(ENGINE_TAG) or engine()
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    return name


def spark_build_args(run_id: str) -> list[str]:
    """dbt arguments of a Spark build; its warehouse (Parquet tables, metastore) under build/."""
    from publish.spark_build import spark_build_env

    folder = config.spark_dir(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["BENCHWH_SPARK_WAREHOUSE"] = str(folder)
    os.environ.update(spark_build_env(config.home()))
    return ["--target", "spark"]


def finish_spark_build(run_id: str, build_file, log) -> None:
    """The Spark build's published tables read into the run's DuckDB build file (publish/spark_build.py)."""
    import shutil

    from orchestration.manifest import MANIFEST_PATH
    from publish.spark_build import assemble_duckdb

    rows = assemble_duckdb(config.spark_dir(run_id), build_file, MANIFEST_PATH)
    log(f"spark: {len(rows)} tables read from Parquet into {build_file.name}")
    shutil.rmtree(config.spark_dir(run_id), ignore_errors=True)

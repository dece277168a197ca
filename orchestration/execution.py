"""How a refresh run is executed: Dagster's multiprocess executor (each source's landing in its own
process, side by side) or in-process, and on which dbt engine (DuckDB, or Spark through dbt-spark).

Settings (checked by ingest.config.check_settings): `BENCHWH_EXECUTOR` (`in_process`, the
default of `benchwh refresh`, or `multiprocess`), `BENCHWH_MAX_CONCURRENT` (steps at once, default
the number of CPUs), `BENCHWH_ENGINE` (`duckdb`, the default, or `spark`; `--engine` overrides it).
Runs launched from the UI or the schedule use Dagster's default executor, multiprocess.
"""
from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
from typing import Iterator, Sequence

import dagster as dg

from ingest import config
from ingest.config import ENGINES, EXECUTORS, engine, executor, max_concurrent


def refresh_job_def() -> dg.JobDefinition:
    """The `refresh` job, rebuilt by each step process of the multiprocess executor (reconstructable)."""
    from orchestration.definitions import defs

    return defs.resolve_job_def("refresh")


def run_config(executor_name: str | None = None, concurrent: int | None = None) -> dict:
    executor_name = executor_name or executor()
    if executor_name not in EXECUTORS:
        raise ValueError(f"unknown executor {executor_name!r}; known: {', '.join(EXECUTORS)}")
    if executor_name == "in_process":
        execution = {"in_process": {}}
    else:
        execution = {"multiprocess": {"max_concurrent": concurrent or max_concurrent()}}
    return {"execution": {"config": execution},
            "loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@contextlib.contextmanager
def execute_refresh(instance: dg.DagsterInstance, tags: dict, executor_name: str | None = None,
                    concurrent: int | None = None,
                    asset_selection: Sequence[dg.AssetKey] | None = None) -> Iterator:
    """Run the refresh job; yields its result (events readable inside the block)."""
    executor_name = executor_name or executor()
    if executor_name == "in_process":
        job = refresh_job_def()
        yield job.execute_in_process(instance=instance, raise_on_error=False, tags=tags,
                                     asset_selection=asset_selection,
                                     run_config={"loggers": run_config("in_process")["loggers"]})
        return
    from orchestration.progress import started_at

    step_env = {"BENCHWH_PROGRESS_PLAIN": "1", "BENCHWH_PROGRESS_T0": repr(started_at()),
                "BENCHWH_RUN_PID": str(os.getpid())}  # step processes inherit them
    saved = {k: os.environ.get(k) for k in step_env}
    os.environ.update(step_env)
    quiet = logging.getLogger("dagster")  # the executor's per-step DEBUG lines are not progress
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        with dg.execute_job(dg.reconstructable(refresh_job_def), instance=instance, tags=tags,
                            run_config=run_config(executor_name, concurrent), raise_on_error=False,
                            asset_selection=list(asset_selection) if asset_selection else None) as result:
            yield result
    finally:
        quiet.setLevel(level)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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

"""How `benchwh refresh` executes the refresh job: Dagster's multiprocess executor (each source's
landing in its own process, side by side) or in-process. Only the CLI imports this module.

Settings (checked by ingest.config.check_settings): `BENCHWH_EXECUTOR` (`in_process`, the
default of `benchwh refresh`, or `multiprocess`), `BENCHWH_MAX_CONCURRENT` (steps at once, default
the number of CPUs). Runs launched from the UI or the schedule use Dagster's default executor,
multiprocess.
"""
from __future__ import annotations

import contextlib
import logging
import os
from typing import Iterator, Sequence

import dagster as dg

from ingest.config import EXECUTORS, executor, max_concurrent
from orchestration.definitions import defs


def refresh_job_def() -> dg.JobDefinition:
    """The `refresh` job, rebuilt by each step process of the multiprocess executor (reconstructable)."""
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

"""Run the refresh job in-process (what `benchwh refresh` and `runs add` call)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from orchestration.progress import progress


@dataclass
class RefreshResult:
    success: bool
    error: str | None = None
    traceback: str | None = None  # the failing step's stack, printed when BENCHWH_DEBUG=1
    run_id: str | None = None
    seconds: float = 0.0
    landed: dict = field(default_factory=dict)  # source -> {"rows": n, "quarantined": n}
    failed_sources: dict = field(default_factory=dict)  # source -> why its fetch or landing failed
    version: str | None = None
    tables: int = 0  # in the published file (marts, site, audit)
    exported: int = 0  # of those, written to exports/ as Parquet (marts, site)
    unchanged: bool = False  # no table differed from the published version: nothing was published
    build_skipped: bool = False  # the inputs were those of the published version: no build ran
    skip_reason: str | None = None


def _failure_traceback(result) -> str | None:
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            err = getattr(event.event_specific_data, "error", None)
            return err.to_string() if err is not None else None
    return None


def _failure_reason(result) -> str:
    check_line = None
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            data = event.event_specific_data
            err = getattr(data, "error", None)
            while err is not None and err.cause is not None:  # the innermost cause says what broke
                err = err.cause
            user = getattr(data, "user_failure_data", None)
            text = (getattr(user, "description", None) or (err.message if err else "") or "step failed")
            line = next((l.strip() for l in text.splitlines() if l.strip()), "step failed")
            step = event.step_key or "run"
            return f"{step}: {line}"
        if event.event_type_value == "ASSET_CHECK_EVALUATION" and check_line is None:
            ev = event.event_specific_data
            if not ev.passed and ev.severity.value == "ERROR":
                check_line = f"check {ev.asset_check_key.name} failed on {'/'.join(ev.asset_key.path)}"
                if ev.description:
                    return f"{check_line}: {ev.description}"
                # a dbt test's check says nothing more: the dbt step's failure that follows names
                # the test and the rows it returned (orchestration/dbt_assets.py first_dbt_failure)
    return check_line or "the refresh run failed"


def _all_failure_texts(result) -> list[str]:
    """Every step failure's messages, causes included (a full disk may show only in a cause)."""
    texts = []
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            err = getattr(event.event_specific_data, "error", None)
            while err is not None:
                texts.append(err.message or "")
                err = err.cause
            user = getattr(event.event_specific_data, "user_failure_data", None)
            texts.append(getattr(user, "description", None) or "")
    return texts


def run_refresh(offline: bool = False, sources: list[str] | None = None,
                log: Callable[[str], None] = progress, engine: str | None = None,
                executor: str | None = None, strict: bool = False) -> RefreshResult:
    """Fetch (all sources, the named ones, or none when sources == []), land, build, audit, publish."""
    from orchestration.instance import ensure_dagster_home
    from ingest.locks import home_lock
    from publish.publish import clean_abandoned_builds
    from publish.verify import check_published, disk_full_line, sweep_temporaries

    started = time.monotonic()
    ensure_dagster_home()
    with home_lock("refresh", log):
        clean_abandoned_builds(log=log)
        sweep_temporaries(log=log)
        state = check_published()
        if not state["ok"]:
            log(f"published file damaged: {state['problem']} (this refresh replaces it; `benchwh rollback` restores the newest good version)")
        # importing Dagster and the dbt project takes seconds: say so rather than sit silent
        log("loading the pipeline (Dagster definitions, dbt manifest)")
        from dagster import DagsterInstance

        from orchestration.manifest import prepare_manifest

        prepare_manifest(log=log)  # the definitions load the dbt assets from it
        from orchestration.execution import execute_refresh
        from orchestration.tags import fetch_tags

        try:
            with DagsterInstance.get() as instance, \
                    execute_refresh(instance, fetch_tags(sources, offline, engine, strict), executor) as result:
                return _outcome(result, started)
        except Exception as exc:
            # a full disk can also fail Dagster's own event log (sqlite under DAGSTER_HOME)
            line = disk_full_line(str(exc))
            if line is None:
                raise
            clean_abandoned_builds(log=None)
            sweep_temporaries()
            return RefreshResult(success=False, error=line, seconds=time.monotonic() - started)


def _outcome(result, started: float) -> RefreshResult:
    """What the run did, read from its events (inside the execution's block: a multiprocess
    result reads them from the instance)."""
    from publish.publish import clean_abandoned_builds
    from publish.verify import disk_full_line, sweep_temporaries

    out = RefreshResult(success=result.success, run_id=result.run_id,
                        seconds=time.monotonic() - started)
    if not result.success:
        out.error = _failure_reason(result)
        out.error = disk_full_line(" ".join(_all_failure_texts(result)) + " " + out.error) or out.error
        out.traceback = _failure_traceback(result)
        clean_abandoned_builds(log=None)  # a full disk keeps no half-written build or WAL
        sweep_temporaries()
        return out
    for event in result.all_events:
        if event.event_type_value == "ASSET_OBSERVATION":
            obs = event.event_specific_data.asset_observation
            md = {k: v.value for k, v in obs.metadata.items()}
            if obs.asset_key.path[0] == "publish" and md.get("build_skipped"):
                out.version, out.unchanged, out.build_skipped = md.get("version"), True, True
                out.skip_reason = md.get("reason")
        elif event.event_type_value == "ASSET_MATERIALIZATION":
            mat = event.event_specific_data.materialization
            key = mat.asset_key.path
            md = {k: v.value for k, v in mat.metadata.items()}
            if key[0] == "landing":
                agg = out.landed.setdefault(key[1], {"rows": 0, "quarantined": 0, "rejected": 0})
                agg["rows"] += int(md.get("rows_landed", 0))
                agg["quarantined"] += int(md.get("rows_quarantined", 0))
                agg["rejected"] = max(agg["rejected"], int(md.get("payloads_rejected", 0)))  # per source, not entity
                if md.get("failure"):
                    out.failed_sources[key[1]] = md["failure"]
            elif key[0] == "publish":
                out.version = md.get("version")
                out.unchanged = bool(md.get("unchanged"))
                out.tables = int(md.get("tables", 0))
                out.exported = int(md.get("tables_exported", 0))
    return out

"""dbt models as Dagster assets: each refresh builds a NEW DuckDB file under warehouse/build/."""

import contextlib
import io
import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import dagster as dg

from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings, DbtCliResource, dbt_assets

from ingest import config, file_memo
from orchestration.progress import count, progress
from orchestration.steps import die_with_run_process, finish_spark_build, spark_build_args, step_engine
from orchestration.manifest import DBT_PROJECT, MANIFEST_PATH, prepare_if_dev
from orchestration.manifest import DBT_NO_TRACKING
from orchestration.resources import build_path, building_path, dbt_target_dir
from orchestration.tags import SOURCES_TAG
from publish.inputs import inputs_fingerprint, published_inputs, sidecar
from publish.report import sources_meta
from publish.verify import disk_error, fault

LAYERS = ("staging", "intermediate", "marts", "site", "audit")


class BenchTranslator(DagsterDbtTranslator):
    """dbt sources map to the landing assets that write them; models are keyed by layer."""

    def get_asset_key(self, props: Mapping[str, Any]) -> dg.AssetKey:
        if props["resource_type"] == "source":
            if props["source_name"] == "raw":
                return dg.AssetKey(["raw", props["name"]])
            return dg.AssetKey(["landing", props["source_name"], props["name"]])
        return dg.AssetKey([self.get_group_name(props), props["name"]])

    def get_group_name(self, props: Mapping[str, Any]) -> str:
        fqn = props.get("fqn") or []
        if props["resource_type"] == "seed":
            return "seeds"
        return fqn[1] if len(fqn) > 2 and fqn[1] in LAYERS else "dbt"


def build_values(run_id: str, code_revision: str) -> dict[str, str]:
    started = datetime.now(timezone.utc)
    return {
        # sorts in time order: publish compares versions as strings
        "build_version": f"{started:%Y%m%dT%H%M%S%fZ}-{run_id[:8]}",
        "build_id": run_id,
        "build_started_at": started.strftime("%Y-%m-%d %H:%M:%S.%f"),
        "code_revision": code_revision,
    }


def build_env(values: dict[str, str]) -> dict[str, str]:
    """The environment variables macros/build_value.sql reads (BENCHWH_BUILD_VERSION, ...): read only
    while dbt executes, so a value that changes every build never voids dbt's partial parse."""
    return {f"BENCHWH_{k.upper()}": v for k, v in values.items()}


def build_vars(run_id: str) -> dict:
    """The values naming a build (audit.build_info), passed to dbt in the environment."""
    return build_values(run_id, code_revision())


def move_build(building: Path, final: Path) -> None:
    """The finished build under its run's name (and a WAL dbt left, which publish checkpoints)."""
    os.replace(building, final)
    wal = Path(f"{building}.wal")
    if wal.exists():
        os.replace(wal, Path(f"{final}.wal"))


def remove_building(building: Path) -> None:
    for leftover in (building, Path(f"{building}.wal")):
        leftover.unlink(missing_ok=True)


def _git_dir() -> Path:
    """`.git` is a folder in a clone and a `gitdir: <path>` file in a worktree."""
    dot_git = config.project_root() / ".git"
    if dot_git.is_file():
        text = dot_git.read_text().strip()
        if text.startswith("gitdir: "):
            return (config.project_root() / text[8:]).resolve()
    return dot_git


def code_revision() -> str:
    try:
        git_dir = _git_dir()
        ref = (git_dir / "HEAD").read_text().strip()
        if not ref.startswith("ref: "):
            return ref[:12]
        # a worktree keeps HEAD in its own folder, refs in the common one
        common = git_dir / "commondir"
        common_dir = (git_dir / common.read_text().strip()).resolve() if common.exists() else git_dir
        for base in (git_dir, common_dir):
            ref_path = base / ref[5:]
            if ref_path.exists():
                return ref_path.read_text().strip()[:12]
        packed = common_dir / "packed-refs"
        for line in packed.read_text().splitlines() if packed.exists() else []:
            if line.endswith(" " + ref[5:]):
                return line.split()[0][:12]
        return "unknown"
    except OSError:
        return "unknown"


class DbtLog(io.TextIOBase):
    """A refresh's dbt log (dagster-dbt writes dbt's output to stdout, redirected here). A write
    or flush that fails (a full disk) is kept in `error`, not raised: raised inside dagster-dbt's
    stream, it left that stream's reader of dbt's stdout to be closed by the garbage collector,
    whose bare `except:` swallows the GeneratorExit ("Exception ignored in ... RuntimeError:
    generator ignored GeneratorExit", a traceback on the terminal). dbt runs to its end; the
    build then fails with the error."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "w", encoding="utf-8")
        self.error: OSError | None = None

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.error is None:
            try:
                self.file.write(text)
            except OSError as exc:
                self.error = exc
        return len(text)

    def flush(self) -> None:
        if self.error is None:
            try:
                self.file.flush()
            except OSError as exc:
                self.error = exc

    def close(self) -> None:
        if self.closed:
            return
        super().close()  # flushes through flush() above
        try:
            self.file.close()  # closes the file even when its last flush fails
        except OSError as exc:
            self.error = self.error or exc


def first_dbt_failure(target: os.PathLike, output: os.PathLike) -> str:
    """One line naming the first failed node of a dbt invocation (its run results in `target`, its
    printed output in `output`)."""
    path = os.path.join(target, "run_results.json")
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return "dbt build failed before producing results (see the dbt log)"
    failed = [r for r in results if r.get("status") in ("error", "fail", "runtime error")]
    # with --fail-fast, the nodes running beside the first failure are cancelled (DuckDB: "INTERRUPT
    # Error: Interrupted!"): name the failure, not a node it stopped
    if not failed:
        return "dbt build failed (no failing node recorded)"
    # the first failure that is no interruption, else the first interruption (min keeps the order)
    r = min(failed, key=lambda r: _INTERRUPTED in (r.get("message") or ""))
    detail = root_error_line(r.get("message") or "") or r.get("status")
    rows = failing_rows(output, r["unique_id"]) if r.get("status") == "fail" else None
    return (f"dbt {r.get('status')} in {r['unique_id']}: {detail}"
            + (f"; failing rows: {rows}" if rows else ""))[:400]


_INTERRUPTED = "Interrupted!"
_FAILING_ROWS = "failing rows of "


def failing_rows(output: os.PathLike, unique_id: str) -> str | None:
    """What a failed data test returned (`column_name=gco2_per_kwh, null_rows=1` for not_null_columns),
    as dbt_project/macros/log_failing_rows.sql logged it into dbt's output (text, or JSON lines);
    dbt's own message only counts the rows."""
    marker = f"{_FAILING_ROWS}{unique_id}: "
    try:
        with open(output, encoding="utf-8", errors="replace") as log:
            found = [line for line in log if marker in line]
    except OSError:
        return None
    if not found:
        return None
    line = found[-1]
    with contextlib.suppress(ValueError, KeyError, TypeError):
        line = json.loads(line)["info"]["msg"]  # the log is JSON lines under dagster-dbt
    return line.split(marker, 1)[1].strip() if marker in line else None


PUBLISH_KEY = dg.AssetKey(["publish", "benchmarks_duckdb"])


def partial_selection_reason(selected: set[dg.AssetKey]) -> str | None:
    """Why a selection of assets cannot run, or None: each run builds a NEW DuckDB file from landing
    (DESIGN §1), so a model materialized alone finds none of its upstream tables there ("Table ...
    does not exist") and leaves a half-built file behind, and publish needs that run's build."""
    wanted = set(dbt_build.keys)
    picked = sorted("/".join(k.path) for k in selected & wanted)
    if picked and len(picked) < len(wanted):
        shown = ", ".join(picked[:3]) + (f" and {len(picked) - 3} more" if len(picked) > 3 else "")
        return (f"refused: {shown} cannot be built alone ({len(picked)} of {len(wanted)} dbt assets selected): every "
                "run builds a new DuckDB file from landing, so a model built without its upstream models finds no "
                "tables. Launch the `refresh` job (live) or `refresh_offline` (recordings), or \"Materialize all\".")
    if PUBLISH_KEY in selected and not picked:
        return ("refused: publish alone has nothing to publish: it publishes the build file of its own run. "
                "Launch the `refresh` job (live) or `refresh_offline` (recordings), or \"Materialize all\".")
    return None


def refuse_partial_build(context: dg.AssetExecutionContext) -> None:
    """A run that selects only some dbt models (a UI launch) is refused in its dbt step before dbt
    starts, with the reason; publish alone is refused in its own step (orchestration/publish_asset.py)."""
    reason = partial_selection_reason(set(context.selected_asset_keys))
    if reason and "dbt assets selected" in reason:
        raise dg.Failure(description=reason)


def node_count() -> int:
    """Nodes a build runs (models, seeds, snapshots, data tests; unit tests when enabled)."""
    from dagster_dbt.asset_utils import get_manifest_and_translator_from_dbt_assets

    kinds = {"model", "seed", "snapshot", "test"}
    if os.environ.get("BENCHWH_DBT_UNIT_TESTS") == "1":
        kinds.add("unit_test")
    # the manifest the definitions loaded, not the file: `dagster dev` may be re-writing that
    manifest = get_manifest_and_translator_from_dbt_assets([dbt_build])[0]
    nodes = [n for n in {**manifest.get("nodes", {}), **manifest.get("unit_tests", {})}.values()
             if n.get("resource_type") in kinds]
    return len(nodes) or 1


def built_summary(target: os.PathLike) -> str:
    """'55 models, 6 seeds built; 150 tests passed': each kind of dbt node counted by its name."""
    from orchestration.progress import plural

    try:
        results = json.load(open(os.path.join(target, "run_results.json")))["results"]
    except (OSError, ValueError, KeyError):
        return "build finished"
    kinds: dict[str, int] = {}
    for r in results:
        kind = r["unique_id"].split(".", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    built = [plural(kinds.get(k, 0), k) for k in ("model", "seed", "snapshot") if kinds.get(k)]
    checked = [plural(kinds.get(k, 0), k.replace("_", " ")) for k in ("test", "unit_test") if kinds.get(k)]
    return ", ".join(built) + " built" + (f"; {', '.join(checked)} passed" if checked else "")


# dbt's wrapper lines say where, not why ("Runtime Error in model x (models/...)")
_WRAPPER = re.compile(r"^(Runtime|Database|Compilation|Parsing|Dependency) Error( in .*)?$|^compiled code at ")


def root_error_line(message: str) -> str:
    """The line of a dbt node message that names the cause, e.g. the DuckDB error."""
    lines = [l.strip() for l in message.strip().splitlines() if l.strip()]
    causes = [l for l in lines if not _WRAPPER.match(l)]
    return (causes or lines or [""])[0]


def remove_build(run_id: str) -> None:
    """A failed build's file, WAL and dbt target folder: nothing of it is published, so none stays."""
    path = build_path(run_id)
    for leftover in (path, Path(f"{path}.wal"), sidecar(path)):
        leftover.unlink(missing_ok=True)
    remove_building(building_path())


# dagster-dbt's way: re-parsed under `dagster dev`, else the manifest a command prepared
prepare_if_dev()


def build_inputs() -> str:
    from orchestration.manifest import project_files_hash

    return inputs_fingerprint(code_revision(), project_files_hash())


def skip_reason(context: dg.AssetExecutionContext, inputs: str) -> tuple[str, str] | None:
    """(published version, why) when this run's build would rebuild the published version.

    Only a refresh that fetches (live, offline or --source) skips: `--no-fetch` and `runs add`
    ask for a build, and so does BENCHWH_DBT_UNIT_TESTS=1 (dbt's unit tests are wanted) or a
    Spark refresh (the published version may have been built by DuckDB)."""
    if (context.run.tags.get(SOURCES_TAG, "all") == "none" or os.environ.get("BENCHWH_DBT_UNIT_TESTS") == "1"
            or step_engine(context.run.tags) != "duckdb"):
        return None
    published = published_inputs()
    if published is None or published[1] != inputs:
        return None
    return published[0], "same landing, fetch log, code and dbt project as the published version"


def damage_stops_the_build() -> None:
    """Landing files checked against their ledger sha256, raw manifest against raw blobs (issue #12)."""
    from ingest.integrity import check_home
    from ingest.source import load_sources

    problems = check_home(config.home(), sorted(load_sources()))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise dg.Failure(description=f"damage found, nothing published: {problems[0]}{more}")


@dbt_assets(manifest=MANIFEST_PATH, project=DBT_PROJECT, dagster_dbt_translator=BenchTranslator(
    settings=DagsterDbtTranslatorSettings(enable_asset_checks=True)), name="dbt_build")
def dbt_build(context: dg.AssetExecutionContext, dbt: DbtCliResource):
    """Build staging → marts/site/audit into warehouse/build/<run id>.duckdb, with dbt tests."""
    die_with_run_process()
    refuse_partial_build(context)
    inputs = build_inputs()
    skipped = skip_reason(context, inputs)
    if skipped:
        version, reason = skipped
        progress(f"dbt: build skipped: {reason}")
        from orchestration.sensors import complete_inbox_reports

        complete_inbox_reports(config.published_path(), log=progress)
        # no dbt asset is materialized, so publish does not run: this says what stays published
        yield dg.AssetObservation(asset_key=PUBLISH_KEY, metadata={
            "version": version, "unchanged": True, "build_skipped": True, "reason": reason})
        return
    damage_stops_the_build()
    sources_meta()  # what publish reports of the sources, from the raw manifests parsed while landing
    file_memo.forget_all()  # the ledgers and raw manifests read while landing: not needed from here on
    path = build_path(context.run.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    sidecar(path).write_text(inputs + "\n")
    from ingest.locks import home_lock

    # one dbt at a time writes build/building.duckdb (a refresh and a UI run may overlap)
    with home_lock("build", progress):
        yield from _run_dbt(context, dbt, path)


def _run_dbt(context: dg.AssetExecutionContext, dbt: DbtCliResource, path: Path):
    run_id = context.run.run_id
    building = building_path()
    remove_building(building)
    # dagster-dbt hands dbt this process's environment
    os.environ.update({"BENCHWH_HOME": str(config.home()), "BENCHWH_PARENT_PID": str(os.getpid()),
                       **DBT_NO_TRACKING, **build_env(build_vars(run_id))})
    os.environ.pop("BENCHWH_BUILD_PATH", None)  # the profile's default: build/building.duckdb
    target = dbt_target_dir()
    for stale in ("run_results.json",):  # a failure is read from this build's results only
        (target / stale).unlink(missing_ok=True)
    progress(f"dbt: building into {path.name}")
    # fail fast: one failure already means nothing is published, so stop building at once
    args = ["build", "--fail-fast"]
    if os.environ.get("BENCHWH_DBT_UNIT_TESTS") != "1":
        # unit tests check SQL logic, not data: CI runs them (tests/), nightly builds skip them
        args += ["--exclude-resource-type", "unit_test"]
    engine = step_engine(context.run.tags)
    if engine == "spark":
        args += spark_build_args(run_id)
    fault("dbt-start")
    invocation = dbt.cli(args, context=context, raise_on_error=False, target_path=target)
    # dbt's own log goes to a file, not the terminal of whoever runs `benchwh`
    log_dir = config.home() / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    for old in sorted(log_dir.glob("dbt-*.log"))[:-20]:
        old.unlink(missing_ok=True)
    log_path = log_dir / f"dbt-{run_id}.log"
    with DbtLog(log_path) as log_file, contextlib.redirect_stdout(log_file):
        total = node_count()
        for done, event in enumerate(invocation.stream(), 1):
            count("dbt", min(done, total), total, "nodes done")
            yield event
    if not invocation.is_successful():
        reason = first_dbt_failure(target, log_path)
        if log_file.error is not None:  # the disk that failed dbt may have failed its log too
            reason += f"; {disk_error(log_file.error, log_path)}"
        remove_build(run_id)
        raise dg.Failure(description=f"{reason} (run {run_id}, log {log_path})")
    if log_file.error is not None:
        remove_build(run_id)
        raise disk_error(log_file.error, log_path)
    progress(f"dbt: {built_summary(target)}")
    if engine == "spark":
        # Spark wrote Parquet tables, no DuckDB file: the run's build file is assembled from them
        finish_spark_build(run_id, path, progress)
    else:
        move_build(building, path)

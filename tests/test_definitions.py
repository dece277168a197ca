"""The Dagster definitions: one graph from landing to publish, grouped by layer."""
from __future__ import annotations

import dagster as dg
import pytest


@pytest.fixture(scope="module")
def defs(tmp_path_factory):
    import os

    os.environ.setdefault("BENCHWH_HOME", str(tmp_path_factory.mktemp("defs") / "warehouse"))
    from orchestration.definitions import defs

    return defs


def test_assets_are_grouped_by_layer(defs):
    graph = defs.resolve_asset_graph()
    groups = {graph.get(k).group_name for k in graph.get_all_asset_keys() if graph.get(k).is_materializable}
    assert {"landing", "staging", "intermediate", "marts", "site", "audit", "publish"} <= groups


def test_dbt_sources_map_to_the_landing_assets(defs):
    graph = defs.resolve_asset_graph()
    landing = dg.AssetKey(["landing", "openrouter", "models"])
    staging = dg.AssetKey(["staging", "stg_openrouter__models"])
    assert graph.get(landing).is_materializable
    assert landing in graph.get(staging).parent_keys
    publish = graph.get(dg.AssetKey(["publish", "benchmarks_duckdb"]))
    assert dg.AssetKey(["marts", "fct_api_prices"]) in publish.parent_keys


def test_every_landing_asset_has_blocking_checks(defs):
    from ingest.source import load_sources

    graph = defs.resolve_asset_graph()
    checks = {(c.asset_key, c.name) for c in graph.asset_check_keys}
    for source in load_sources().values():
        for entity in source.entities:
            key = dg.AssetKey(["landing", source.name, entity.name])
            for name in ("volume", "quarantine_share", "freshness"):
                assert (key, name) in checks, (key, name)


def test_nightly_schedule_and_inbox_sensor(defs):
    schedule = defs.resolve_schedule_def("nightly_refresh")
    assert schedule.cron_schedule == "0 3 * * *" and schedule.execution_timezone == "UTC"
    assert schedule.job_name == "refresh"
    assert defs.resolve_sensor_def("inbox_sensor") is not None


def test_every_job_forks_its_step_processes_from_a_forkserver_unless_its_run_says_otherwise(defs):
    """The schedule's and the UI's runs name no executor config: their steps fork from a forkserver
    holding the definitions (execution.refresh_executor); a run's own choice still wins."""
    from dagster._core.system_config.objects import ResolvedRunConfig

    from orchestration.execution import STEP_START_METHOD, run_config

    def executor_config(job, config):
        return ResolvedRunConfig.build(job, config).execution.execution_engine_config

    for name in ("refresh", "refresh_offline", "backfill_landing", "__ASSET_JOB"):  # last: "Materialize all"
        job = defs.resolve_job_def(name)
        assert executor_config(job, {})["multiprocess"]["start_method"] == STEP_START_METHOD, name
    job = defs.resolve_job_def("refresh")
    cli = executor_config(job, {"execution": run_config("multiprocess", 3)["execution"]})["multiprocess"]
    assert (cli["max_concurrent"], cli["start_method"]) == (3, STEP_START_METHOD)
    spawn = {"execution": {"config": {"multiprocess": {"start_method": {"spawn": {}}}}}}
    assert executor_config(job, spawn)["multiprocess"]["start_method"] == {"spawn": {}}
    assert set(executor_config(job, {"execution": run_config("in_process")["execution"]})) == {"in_process"}


def test_dagster_dev_parses_into_its_own_folder_and_leaves_the_install_manifest_alone(tmp_path):
    """Under `dagster dev` every load of the definitions re-parses the dbt project (dagster-dbt), and
    dbt writes its manifest in place: a `benchwh refresh` started beside the UI, which loads the
    install's manifest, once read a half-written one (JSONDecodeError). Dev parses into target/dev/."""
    from pathlib import Path

    from orchestration.manifest import DBT_PROJECT_DIR, prepare_manifest

    install = prepare_manifest()
    before = (install.stat().st_mtime_ns, install.read_bytes())
    code = ("import json, sys, orchestration.definitions\nfrom orchestration.manifest import MANIFEST_PATH\n"
            "print(json.dumps({'dbt_core': 'dbt' in sys.modules, 'manifest': str(MANIFEST_PATH)}))")
    out = _python(code, home=tmp_path / "warehouse", DAGSTER_IS_DEV_CLI="1")
    assert not out["dbt_core"], "dev's parse loaded dbt-core in the code server (BenchPreparer)"
    dev_manifest = Path(out["manifest"])
    assert dev_manifest == DBT_PROJECT_DIR / "target" / "dev" / "manifest.json" and dev_manifest.exists()
    assert (install.stat().st_mtime_ns, install.read_bytes()) == before


GRAPH = """
import json, re, sys
if sys.argv[1] == "with-dbt-core":
    import dbt.version  # as if something in the process had imported dbt first
import orchestration.definitions
import dagster_dbt.compat
graph = orchestration.definitions.defs.resolve_asset_graph()
nodes = {node.key.to_user_string(): {
    "deps": sorted(k.to_user_string() for k in node.parent_keys),
    "checks": sorted(str(k) for k in node.check_keys), "group": node.group_name,
    "kinds": sorted(node.kinds), "tags": node.tags, "description": node.description,
    "metadata": {k: re.sub("0x[0-9a-f]+", "0x", str(v)) for k, v in node.metadata.items()
                 if k != "dagster/code_references"}} for node in graph.asset_nodes}
print(json.dumps({"dbt_core": dagster_dbt.compat.DBT_PYTHON_VERSION is not None, "nodes": nodes}, sort_keys=True))
"""

# as dbt_assets runs dbt: benchwh-dbt (forked from the warm dbt server), from the install's parse
DBT_EVENTS = """
import json, sys
from pathlib import Path
from orchestration.dbt_assets import BenchTranslator
from orchestration.dbt_cli import BenchDbtCliResource, guarded_dbt_executable
from orchestration.dbt_state import reuse_parse
from orchestration.manifest import DBT_PROJECT_DIR, MANIFEST_PATH
dbt = BenchDbtCliResource(project_dir=str(DBT_PROJECT_DIR), profiles_dir=str(DBT_PROJECT_DIR),
                          dbt_executable=guarded_dbt_executable())
reuse_parse(Path(sys.argv[1]))
invocation = dbt.cli(["build", "--select", "quantizations", "--indirect-selection", "cautious"],
                     manifest=MANIFEST_PATH, dagster_dbt_translator=BenchTranslator(),
                     target_path=Path(sys.argv[1]), raise_on_error=False)
events = [(type(e).__name__, e.asset_key.to_user_string() if getattr(e, "asset_key", None) else e.output_name)
          for e in invocation.stream()]
print(json.dumps({"ok": invocation.is_successful(), "events": events, "dbt_core": "dbt" in sys.modules}))
"""


def _python(code: str, *args: str, home, **env_extra: str) -> dict:
    """Run `code` in a new interpreter in the project, the home given; its last line is JSON."""
    import json
    import os
    import subprocess
    import sys

    from orchestration.manifest import DBT_PROJECT_DIR, prepare_manifest

    prepare_manifest()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWH_", "DAGSTER_"))}
    # dbt's files in the test's folder, not the project's: benchwh-dbt runs dbt in the home
    env.update(BENCHWH_HOME=str(home), DBT_LOG_PATH=str(home / "logs"), **env_extra)
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=DBT_PROJECT_DIR.parent,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_dagster_dbt_loads_without_dbt_core_and_the_asset_graph_is_the_same(tmp_path):
    """orchestration/dbt_cli.py: Dagster's processes load dagster-dbt in its mode for a dbt-core
    installed elsewhere (1.3 CPU-s less per process); every asset, dependency, check and metadata
    value is what dagster-dbt gives with dbt-core imported."""
    without = _python(GRAPH, "default", home=tmp_path)
    with_core = _python(GRAPH, "with-dbt-core", home=tmp_path)
    assert (without["dbt_core"], with_core["dbt_core"]) == (False, True)
    assert len(without["nodes"]) > 80 and without["nodes"] == with_core["nodes"]


def test_a_dbt_invocation_streams_its_asset_events_without_dbt_core(tmp_path):
    """The dbt CLI's events become Dagster events (a seed's materialization, its test's check) through
    dagster-dbt's own types when dbt-core is not loaded, and nothing loads it on the way."""
    (tmp_path / "build").mkdir()  # where the build's file goes, as dbt_assets makes it
    out = _python(DBT_EVENTS, str(tmp_path / "target"), home=tmp_path)
    assert out["ok"] and not out["dbt_core"], out
    kinds = {kind for kind, _ in out["events"]}
    assert ("AssetMaterialization", "seeds/quantizations") in [tuple(e) for e in out["events"]], out["events"]
    assert "AssetCheckEvaluation" in kinds, out["events"]  # its unique test

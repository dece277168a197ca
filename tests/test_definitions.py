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


def test_dagster_dev_parses_into_its_own_folder_and_leaves_the_install_manifest_alone(tmp_path):
    """Under `dagster dev` every load of the definitions re-parses the dbt project (dagster-dbt), and
    dbt writes its manifest in place: a `benchwh refresh` started beside the UI, which loads the
    install's manifest, once read a half-written one (JSONDecodeError). Dev parses into target/dev/."""
    from pathlib import Path

    from orchestration.manifest import DBT_PROJECT_DIR, prepare_manifest

    install = prepare_manifest()
    before = (install.stat().st_mtime_ns, install.read_bytes())
    code = ("import json, sys, orchestration.definitions\nfrom orchestration.manifest import MANIFEST_PATH\n"
            "print(json.dumps({'manifest': str(MANIFEST_PATH)}))")
    out = _python(code, home=tmp_path / "warehouse", DAGSTER_IS_DEV_CLI="1")
    dev_manifest = Path(out["manifest"])
    assert dev_manifest == DBT_PROJECT_DIR / "target" / "dev" / "manifest.json" and dev_manifest.exists()
    assert (install.stat().st_mtime_ns, install.read_bytes()) == before


# as dbt_assets runs dbt: the project's DbtCliResource
DBT_EVENTS = """
import json, sys
from pathlib import Path
from orchestration.dbt_assets import BenchTranslator
from orchestration.manifest import MANIFEST_PATH
from orchestration.resources import dbt_resource
dbt = dbt_resource()
invocation = dbt.cli(["build", "--select", "quantizations", "--indirect-selection", "cautious"],
                     manifest=MANIFEST_PATH, dagster_dbt_translator=BenchTranslator(),
                     target_path=Path(sys.argv[1]), raise_on_error=False)
events = [(type(e).__name__, e.asset_key.to_user_string() if getattr(e, "asset_key", None) else e.output_name)
          for e in invocation.stream()]
print(json.dumps({"ok": invocation.is_successful(), "events": events}))
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
    env.update(BENCHWH_HOME=str(home), DBT_LOG_PATH=str(home / "logs"), **env_extra)
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=DBT_PROJECT_DIR.parent,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_dbt_invocation_streams_its_asset_events(tmp_path):
    """The dbt CLI's events become Dagster events (a seed's materialization, its test's check)."""
    (tmp_path / "build").mkdir()  # where the build's file goes, as dbt_assets makes it
    out = _python(DBT_EVENTS, str(tmp_path / "target"), home=tmp_path)
    assert out["ok"], out
    kinds = {kind for kind, _ in out["events"]}
    assert ("AssetMaterialization", "seeds/quantizations") in [tuple(e) for e in out["events"]], out["events"]
    assert "AssetCheckEvaluation" in kinds, out["events"]  # its unique test

"""Versioned releases (issue 55): immutable folders, a Frictionless data package that validates and
whose checksums match, Parquet files that carry their docs, and `latest.json` written last."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import yaml
from frictionless import Checklist, Package, Resource, Schema, validate

from publish import publish as pub
from publish import release
from tests.helpers.pipeline import make_build, run_benchwh

DBT_MODELS = Path(__file__).resolve().parents[1] / "dbt_project" / "models"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _latest_release(home: Path) -> tuple[dict, Path]:
    latest = json.loads((home / "exports" / "latest.json").read_text())
    return latest, home / "exports" / latest["path"]


def _tree(folder: Path) -> dict[str, str]:
    return {p.name: _sha256(p) for p in sorted(folder.iterdir())}


def _yaml_column_descriptions() -> dict[tuple[str, str], str]:
    """(model, column) -> description as written in the dbt YAML, read independently of dbt."""
    out = {}
    for path in DBT_MODELS.rglob("*.yml"):
        for model in (yaml.safe_load(path.read_text()) or {}).get("models", []):
            for column in model.get("columns", []):
                if column.get("description"):
                    out[(model["name"], column["name"])] = " ".join(str(column["description"]).split())
    return out


def test_release_validates_and_its_checksums_match_the_files(offline_warehouse):
    latest, folder = _latest_release(offline_warehouse)
    package_path = folder / "datapackage.json"
    assert latest["datapackage_sha256"] == _sha256(package_path)
    package = json.loads(package_path.read_text())
    manifest = json.loads((offline_warehouse / "exports" / "manifest.json").read_text())
    assert package["version"] == latest["version"] == manifest["version"]
    assert package["code_revision"] == manifest["code_revision"]
    assert package["demo_data"] == manifest["demo_data"] == latest["demo_data"] != []
    assert {r["title"] for r in package["resources"]} == set(manifest["tables"])

    # the descriptor follows the Data Package spec; frictionless also reads every file through its
    # own Parquet reader and checks types, keys and constraints (its reader gives no byte count)
    report = validate(str(package_path), checklist=Checklist(skip_errors=["byte-count", "type-error"]))
    assert report.valid, report.flatten(["resourceName", "type", "note"])[:5]
    assert Package.validate_descriptor(package).valid
    # frictionless' Parquet reader turns a null integer into NaN (pandas), so types are checked on
    # the rows as pyarrow reads them: every field's type, the primary and foreign keys
    resources = []
    for resource in package["resources"]:
        path = folder / resource["path"]
        assert resource["bytes"] == path.stat().st_size, resource["name"]
        assert resource["hash"] == f"sha256:{_sha256(path)}", resource["name"]
        table = pq.read_table(path)
        assert resource["rows"] == table.num_rows == manifest["tables"][resource["title"]]["rows"]
        rows = [table.column_names] + [list(r.values()) for r in table.to_pylist()]
        resources.append(Resource(name=resource["name"], data=rows, schema=Schema.from_descriptor(resource["schema"])))
    report = Package(resources=resources).validate()
    assert report.valid, report.flatten(["resourceName", "type", "fieldName", "note"])[:5]
    assert any("foreignKeys" in r["schema"] for r in package["resources"])
    assert sum("primaryKey" in r["schema"] for r in package["resources"]) >= 20

    # per field: the dbt YAML's description, a unit where the name says one
    described = _yaml_column_descriptions()
    fields = {(r["name"], f["name"]): f for r in package["resources"] for f in r["schema"]["fields"]}
    shared = [k for k in fields if k in described]
    assert len(shared) > 300
    for key in shared:
        assert " ".join(fields[key]["description"].split()) == described[key], key
    assert fields[("fct_speed_summary", "gen_tps_median")]["unit"] == "tokens per second"
    assert fields[("model_cost_vs_api", "local_usd_per_mtok")]["unit"] == "USD per million tokens"
    assert fields[("dim_hardware", "memory_gib")]["unit"].startswith("GiB")
    for resource in package["resources"]:
        assert resource["licenses"] and all(lic.get("name") for lic in resource["licenses"]), resource["name"]
        assert resource["sources"] and all(s["attribution"] for s in resource["sources"]), resource["name"]


def test_every_release_file_reads_with_pandas_and_duckdb_and_carries_its_docs(offline_warehouse):
    _, folder = _latest_release(offline_warehouse)
    package = json.loads((folder / "datapackage.json").read_text())
    published = duckdb.connect(str(offline_warehouse / "benchmarks.duckdb"), read_only=True)
    try:
        for resource in package["resources"]:
            path = folder / resource["path"]
            frame = pd.read_parquet(path)
            assert len(frame) == resource["rows"]
            assert list(frame.columns) == [f["name"] for f in resource["schema"]["fields"]]
            # the same rows as the published table, as DuckDB reads the file
            schema, table = resource["title"].split(".")
            difference = published.execute(
                f"SELECT count(*) FROM (SELECT * FROM read_parquet('{path}') EXCEPT ALL "
                f'SELECT * FROM "{schema}"."{table}")').fetchone()[0]
            assert difference == 0, resource["name"]

            metadata = pq.read_schema(path).metadata
            assert metadata[b"table"].decode() == resource["title"]
            assert metadata[b"description"].decode() == resource["description"] != ""
            columns = json.loads(metadata[b"columns"])
            assert set(columns) == set(frame.columns)
            assert all(columns[f["name"]]["unit"] == f.get("unit") for f in resource["schema"]["fields"])

            parquet = pq.ParquetFile(path).metadata
            assert all(parquet.row_group(i).num_rows <= release.ROW_GROUP_ROWS for i in range(parquet.num_row_groups))
            if resource["rows"]:
                assert parquet.row_group(0).column(0).statistics.has_min_max
            keys = resource["sorted_by"]
            if "model_id" in frame.columns and resource["rows"] > 1:
                assert keys[0] == "model_id"
                ordered = frame["model_id"].fillna("\uffff").tolist()  # DuckDB sorts nulls last
                assert ordered == sorted(ordered), resource["name"]
    finally:
        published.close()


# Follows latest.json and reads the release it names, as a site's reader does, while publishes run;
# each build carries its version in a table written first and in one written last.
READER = r"""
import json, os, sys, duckdb
exports, stop, out = sys.argv[1], sys.argv[2], sys.argv[3]
reads, mixed, versions = 0, [], set()
while not os.path.exists(stop):
    latest = json.load(open(os.path.join(exports, "latest.json")))
    folder = os.path.join(exports, latest["path"])
    package = json.load(open(os.path.join(folder, "datapackage.json")))
    seen = {package["version"], latest["version"]}
    for name in ("aaa_release_marker", "zzz_release_marker"):
        seen |= {r[0] for r in duckdb.sql(f"SELECT version FROM '{folder}/{name}.parquet'").fetchall()}
    reads += 1
    versions |= seen
    if len(seen) != 1:
        mixed.append(sorted(seen))
json.dump({"reads": reads, "mixed": mixed, "versions": sorted(versions)}, open(out, "w"))
"""


def _marked_build(home: Path, version: str) -> Path:
    build = make_build(home, version)
    con = duckdb.connect(str(build))
    for schema, name in (("marts", "aaa_release_marker"), ("site", "zzz_release_marker")):
        con.execute(f"CREATE OR REPLACE TABLE {schema}.{name} AS SELECT ? AS version FROM range(3)", [version])
    con.close()
    return build


def test_a_reader_during_ten_publishes_never_mixes_versions_and_releases_never_change(warehouse_copy, monkeypatch,
                                                                                       tmp_path):
    home = warehouse_copy
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    versions = [f"29990101T0000{i:02d}000000Z-release" for i in range(10)]
    pub.publish(_marked_build(home, versions[0]), {}, lambda m: None, if_changed=False)
    first_release = home / "exports" / "releases" / versions[0]
    before = _tree(first_release)

    stop, out = tmp_path / "stop", tmp_path / "reader.json"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(home / "exports"), str(stop), str(out)])
    try:
        time.sleep(1.0)
        for version in versions[1:]:
            pub.publish(_marked_build(home, version), {}, lambda m: None, if_changed=False)
            if version == versions[3]:
                assert _tree(first_release) == before  # byte-identical after later publishes
        time.sleep(0.5)
    finally:
        stop.touch()
        try:
            reader.wait(timeout=60)
        except subprocess.TimeoutExpired:  # it writes no result, so the test fails below
            reader.kill()
            reader.wait()
    result = json.loads(out.read_text())
    assert result["mixed"] == [] and result["reads"] > 0, result
    assert len(result["versions"]) > 1, result  # the reader did see publishes happen
    latest, folder = _latest_release(home)
    assert latest["version"] == versions[-1] and folder.name == versions[-1]
    kept = sorted(p.name for p in (home / "exports" / "releases").iterdir())
    assert kept == versions[-release.RELEASES_KEEP:]  # the retention rule
    # the flat files are the latest release's
    assert _sha256(home / "exports" / "aaa_release_marker.parquet") == _sha256(folder / "aaa_release_marker.parquet")


def test_rollback_points_latest_back_at_the_unchanged_release(warehouse_copy, monkeypatch):
    home = warehouse_copy
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    first, folder = _latest_release(home)
    before = _tree(folder)
    second = "29990101T000000000000Z-second"
    pub.publish(_marked_build(home, second), {}, lambda m: None, if_changed=False)
    assert _latest_release(home)[0]["version"] == second
    proc = run_benchwh(home, "rollback")
    assert proc.returncode == 0, proc.stderr
    latest, rolled_to = _latest_release(home)
    assert latest["version"] == first["version"] and rolled_to == folder
    assert _tree(folder) == before
    assert not (home / "exports" / "aaa_release_marker.parquet").exists()  # flat copy follows latest
    # a release pruned away is written again from history when rolled back to
    (home / "exports" / "latest.json").unlink()
    for item in folder.iterdir():
        item.unlink()
    folder.rmdir()
    proc = run_benchwh(home, "rollback", second)
    assert proc.returncode == 0, proc.stderr
    proc = run_benchwh(home, "rollback", first["version"])
    assert proc.returncode == 0, proc.stderr
    assert _latest_release(home)[0]["version"] == first["version"] and (folder / "datapackage.json").exists()

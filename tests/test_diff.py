"""`benchwh diff` between published versions, the diff in the manifest, and refreshes that change
nothing publishing nothing."""
from __future__ import annotations

import json
import shutil

import duckdb
import pytest
from bs4 import BeautifulSoup

from ingest.sources.runs import dsse
from ingest.sources.runs.payload import payload_bytes
from publish.publish import read_version
from tests.helpers.hostile import good_payload
from tests.helpers.keys import trust
from tests.helpers.pipeline import run_benchwh

pytestmark = pytest.mark.slow

# marts.fct_speed_summary's primary key (its dbt contract); `benchwh diff` lists keys by it
SUMMARY_KEY = ["hardware_id", "build_id", "engine", "config_id", "test_profile"]


@pytest.fixture(scope="module")
def with_new_run(offline_warehouse, tmp_path_factory):
    """The offline warehouse plus one signed run: Llama 3.1 8B Q4_K_M on an RTX 4090, packaged by
    unsloth (the offline data holds bartowski's file of the same model and quant)."""
    base = tmp_path_factory.mktemp("diff")
    home = base / "warehouse"
    shutil.copytree(offline_warehouse, home, ignore=shutil.ignore_patterns("dagster", "*.lock"))
    old_version = read_version(home / "benchmarks.duckdb")["version"]
    dsse.write_private_key(base / "k.pem")
    key = dsse.load_private_key(base / "k.pem")
    trust(home, key, "diff-tester")
    doc = good_payload(**{"model.repo": "unsloth/Llama-3.1-8B-Instruct-GGUF",
                          "model.file": "Llama-3.1-8B-Instruct-Q4_K_M.gguf",
                          "created_at": "2026-11-20T10:00:00Z"})
    run_file = base / "run.json"
    run_file.write_text(json.dumps(dsse.sign_payload(payload_bytes(doc), key)))
    proc = run_benchwh(home, "runs", "add", str(run_file))
    assert proc.returncode == 0, proc.stderr
    new_version = read_version(home / "benchmarks.duckdb")["version"]
    assert new_version != old_version
    return home, doc, old_version, new_version


def test_diff_lists_exactly_the_new_run_and_the_summary_rows_it_changed(with_new_run):
    home, doc, old, new = with_new_run
    proc = run_benchwh(home, "diff", "--json")  # defaults: the published version against the one before
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert (summary["old"], summary["new"], summary["changed"]) == (old, new, True)
    assert summary["new_runs"] == [{"source": "runfile", "source_run_id": doc["submission_id"]}]
    assert summary["removed_runs"] == [] and summary["price_changes"] == []

    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        touched = {tuple(r) for r in con.execute(f"""
            SELECT DISTINCT {', '.join(SUMMARY_KEY)} FROM marts.fct_speed_measurements m
            JOIN (SELECT DISTINCT hardware_id, test_name AS test_profile FROM marts.fct_speed_measurements
                  WHERE source_run_id = ?) r USING (hardware_id)
            WHERE m.test_name = r.test_profile AND m.trust IN ('signed', 'source')""", [doc["submission_id"]]).fetchall()}
    finally:
        con.close()
    speed = summary["tables"]["marts.fct_speed_summary"]
    assert speed["key"] == SUMMARY_KEY and speed["removed"] == 0
    listed = {tuple(k[c] for c in SUMMARY_KEY) for k in speed["added_keys"] + speed["changed_keys"]}
    # the run's own summary row is new or changed; ranks may move for the others on its leaderboard
    own = {r for r in touched if r[1].startswith("llama-3.1-8b-instruct@") and "unsloth/" in r[1] and r[2] == "llama.cpp"}
    assert own and own <= listed <= touched
    assert speed["added"] + speed["changed"] == len(listed)
    measurements = summary["tables"]["marts.fct_speed_measurements"]
    assert measurements["added"] == len(doc["samples"]) and measurements["removed"] == measurements["changed"] == 0

    text = run_benchwh(home, "diff", old, new)
    assert text.returncode == 0, text.stderr
    assert f"runfile {doc['submission_id']}" in text.stdout
    assert "marts.fct_speed_summary: +" in text.stdout


def test_the_published_manifest_carries_the_same_diff(with_new_run):
    home, doc, old, new = with_new_run
    manifest = json.loads((home / "exports" / "manifest.json").read_text())
    assert manifest["version"] == new
    assert manifest["changes"]["old"] == old and manifest["changes"]["new"] == new
    assert manifest["changes"]["new_runs"] == [{"source": "runfile", "source_run_id": doc["submission_id"]}]


def test_diff_user_errors_are_one_line(with_new_run):
    home, *_ = with_new_run
    proc = run_benchwh(home, "diff", "no-such-version")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("benchwh: unknown version no-such-version")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_model_measured_by_two_packagers_shows_two_build_rows(with_new_run, tmp_path):
    home, *_ = with_new_run
    proc = run_benchwh(home, "site", "build", "--out", str(tmp_path / "site"))
    assert proc.returncode == 0, proc.stderr
    page = BeautifulSoup((tmp_path / "site" / "models" / "llama-3.1-8b-instruct.html").read_text(), "html.parser")
    rows = page.select("table.builds tbody tr.build")
    q4 = [r for r in rows if r.select_one("td").get_text(" ", strip=True).startswith("Q4_K_M")]
    # LocalScore's Q4_K_M names no file: its own row, marked, beside the two packagers' files
    unfiled = [r for r in q4 if "unfiled" in r["class"]]
    assert len(unfiled) == 1 and "file not named" in unfiled[0].get_text(" ", strip=True)
    q4 = [r for r in q4 if "unfiled" not in r["class"]]
    assert len(q4) == 2
    text = " ".join(r.get_text(" ", strip=True) for r in q4)
    assert "bartowski" in text and "unsloth" in text


def test_a_second_offline_refresh_with_nothing_new_publishes_nothing(warehouse_copy):
    before = read_version(warehouse_copy / "benchmarks.duckdb")["version"]
    history = list_history_of(warehouse_copy)
    manifest = (warehouse_copy / "exports" / "manifest.json").read_bytes()
    proc = run_benchwh(warehouse_copy, "refresh", "--offline")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("nothing new:") and before in proc.stdout
    assert read_version(warehouse_copy / "benchmarks.duckdb")["version"] == before
    assert list_history_of(warehouse_copy) == history
    assert (warehouse_copy / "exports" / "manifest.json").read_bytes() == manifest
    assert not list((warehouse_copy / "build").glob("*.duckdb"))  # the unpublished build is gone


def list_history_of(home):
    return sorted(p.name for p in (home / "history").glob("*.duckdb"))

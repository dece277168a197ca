"""Issue 17: a build reuses dbt's parse of the build before it, and a refresh with nothing new
skips the build (README "A refresh with nothing new"). Real refreshes, real dbt."""
from __future__ import annotations

import json
import shutil
import time

import pytest

from ingest.sources.runs import dsse
from ingest.sources.runs.payload import payload_bytes
from publish.publish import read_version
from tests.helpers.hostile import good_payload
from tests.helpers.keys import trust
from tests.helpers.pipeline import run_benchwh

pytestmark = pytest.mark.slow

FULL_PARSE = ("Unable to do partial parsing", "Starting full parse")


def dbt_log(home, stdout: str) -> str:
    version = stdout.split("refreshed ", 1)[1].split(":", 1)[0]
    run_prefix = version.rsplit("-", 1)[1]
    (log,) = [p for p in (home / "logs").glob("dbt-*.log") if p.name[4:].startswith(run_prefix)]
    return log.read_text(encoding="utf-8", errors="replace")


def build_info(path) -> tuple:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        cols = con.execute("select column_name, data_type from information_schema.columns where "
                           "table_schema = 'audit' and table_name = 'build_info' order by ordinal_position").fetchall()
        return cols, con.execute("from audit.build_info").fetchall()
    finally:
        con.close()


def test_a_build_in_a_new_home_does_not_parse_the_dbt_project(warehouse_copy):
    home = warehouse_copy
    (home / "benchmarks.duckdb").unlink()  # the refresh builds and publishes
    shutil.rmtree(home / "dbt-state")  # a home no build ran in: it starts from the install's parse
    first = run_benchwh(home, "refresh", "--no-fetch")
    assert first.returncode == 0, first.stderr
    assert (home / "dbt-state" / "partial_parse.msgpack").exists()  # kept for the next build
    # nothing in the parse names a home (dbt runs in it, with relative paths): no parse at all
    assert not any(m in dbt_log(home, first.stdout) for m in FULL_PARSE)
    # the values naming the build still reach audit.build_info (env, not --vars)
    cols, rows = build_info(home / "benchmarks.duckdb")
    assert cols == [("version", "VARCHAR"), ("build_id", "VARCHAR"), ("build_started_at", "TIMESTAMP"),
                    ("code_revision", "VARCHAR"), ("default_context_tokens", "INTEGER")]
    version, build_id, _started, revision, _tokens = rows[0]
    assert version == read_version(home / "benchmarks.duckdb")["version"] and version.endswith(build_id[:8])
    assert revision not in ("unknown", "dev") and version != "dev"
    assert not (home / "build" / "building.duckdb").exists()


def test_nothing_new_skips_the_build_and_a_new_run_builds_from_the_kept_parse(warehouse_copy, tmp_path):
    home = warehouse_copy
    before = read_version(home / "benchmarks.duckdb")["version"]
    published = (home / "benchmarks.duckdb").read_bytes()
    history = sorted(p.name for p in (home / "history").glob("*.duckdb"))
    logs = set((home / "logs").glob("dbt-*.log"))

    proc = run_benchwh(home, "refresh", "--offline")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("nothing new:") and "build skipped" in proc.stdout and before in proc.stdout
    assert set((home / "logs").glob("dbt-*.log")) == logs  # dbt never started
    assert (home / "benchmarks.duckdb").read_bytes() == published
    assert sorted(p.name for p in (home / "history").glob("*.duckdb")) == history

    # a new signed run file lands: the next refresh builds and publishes a newer version
    dsse.write_private_key(tmp_path / "k.pem")
    key = dsse.load_private_key(tmp_path / "k.pem")
    trust(home, key, "reuse-tester")
    run_file = tmp_path / "run.json"
    run_file.write_text(json.dumps(dsse.sign_payload(payload_bytes(good_payload()), key)))
    added = run_benchwh(home, "runs", "add", "--no-publish", str(run_file))
    assert added.returncode == 0, added.stderr
    time.sleep(0.01)
    proc = run_benchwh(home, "refresh", "--offline")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refreshed "), proc.stdout
    # a build after another in the same home starts from the parse that one kept: no parse either
    assert not any(m in dbt_log(home, proc.stdout) for m in FULL_PARSE)
    after = read_version(home / "benchmarks.duckdb")["version"]
    assert after > before

    # and the refresh after that has nothing new again
    proc = run_benchwh(home, "refresh", "--offline")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("nothing new:") and "build skipped" in proc.stdout and after in proc.stdout


def test_the_kept_parse_comes_first_then_the_installs(tmp_path):
    from orchestration.dbt_state import PARSE_STATE, PARSED_IN, install_parse_state, keep_parse, reuse_parse

    build = tmp_path / "build-target"
    build.mkdir()
    (build / PARSE_STATE).write_bytes(b"kept")
    kept = tmp_path / "dbt-state"
    keep_parse(build, kept)
    installs = (install_parse_state() / PARSE_STATE).read_bytes()
    assert reuse_parse(tmp_path / "t1", kept) and (tmp_path / "t1" / PARSE_STATE).read_bytes() == b"kept"
    # kept by another checkout of the project (moved, or sharing this home): its seeds name that
    # checkout's folder, so the install's parse is used
    (kept / PARSED_IN).write_text("/elsewhere/dbt_project\n")
    assert reuse_parse(tmp_path / "t2", kept) and (tmp_path / "t2" / PARSE_STATE).read_bytes() == installs
    (kept / PARSED_IN).unlink()  # kept before states were marked: the same
    assert reuse_parse(tmp_path / "t3", kept) and (tmp_path / "t3" / PARSE_STATE).read_bytes() == installs
    (kept / PARSE_STATE).unlink()
    assert reuse_parse(tmp_path / "t4", kept)
    assert (tmp_path / "t4" / PARSE_STATE).read_bytes() == installs


def test_the_install_parse_keeps_the_seeds():
    """The parse state a new home's first build starts from (`make manifest`'s) keeps its seeds:
    dagster-dbt's preparer blanks their checksums, and every such build then parsed them again."""
    import msgpack

    from orchestration.dbt_state import PARSE_STATE, install_parse_state
    from orchestration.manifest import prepare_manifest

    prepare_manifest()
    with open(install_parse_state() / PARSE_STATE, "rb") as state:
        files = msgpack.unpack(state, raw=False, strict_map_key=False)["files"]
    seeds = {name: entry["checksum"]["checksum"] for name, entry in files.items()
             if entry.get("parse_file_type") == "seed"}
    assert "benchwh://seeds/hardware_catalogue.csv" in seeds
    assert all(checksum and set(checksum) != {"0"} for checksum in seeds.values()), seeds


REPARSE = """
import json
from orchestration.manifest import MANIFEST_PATH, prepare_manifest
before = MANIFEST_PATH.stat().st_ino
prepare_manifest()  # no parse key beside the manifest: as if a model changed
print(json.dumps({"before": before, "after": MANIFEST_PATH.stat().st_ino,
                  "nodes": len(json.loads(MANIFEST_PATH.read_text())["nodes"]),
                  "left": sorted(p.name for p in MANIFEST_PATH.parent.iterdir() if p.name.startswith(".parse-"))}))
"""


def test_a_new_parse_replaces_the_manifest_and_never_rewrites_it(tmp_path):
    """dbt writes its manifest in place; a refresh loading the definitions while another process
    parses must find the old manifest or the new one. So the parse goes to a private folder and
    its files are renamed into place: the manifest is a new file (inode), nothing is left behind.
    In a copy of the project (the install's own manifest is shared by the running suite)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.helpers.pipeline import copy_project

    root = Path(__file__).resolve().parent.parent
    copy = tmp_path / "project"
    copy_project(root, copy, shutil.ignore_patterns(".git", ".venv", "warehouse", "target", "logs",
                                                    "__pycache__", "*.egg-info", "build", "dist"))
    (copy / "dbt_project" / "target").mkdir()
    for name in ("manifest.json", "partial_parse.msgpack"):  # the install's parse: a partial parse follows
        shutil.copyfile(root / "dbt_project" / "target" / name, copy / "dbt_project" / "target" / name)
    (copy / "dbt_project" / "target" / ".parse-1").mkdir()  # left by a killed parse
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWH_", "DAGSTER_"))}
    env.update(PYTHONPATH=str(copy), BENCHWH_HOME=str(tmp_path / "warehouse"))
    proc = subprocess.run([sys.executable, "-c", REPARSE], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["after"] != out["before"], "the manifest was rewritten in place"
    assert out["nodes"] > 100 and out["left"] == []

"""A build reuses dbt's own partial parse of the build before it in the same home (one dbt target
folder per home), and a refresh with nothing new skips the build. Real refreshes, real dbt."""
from __future__ import annotations

import json
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


def test_nothing_new_skips_the_build_and_the_next_builds_start_from_dbts_own_partial_parse(warehouse_copy, tmp_path):
    """One home through four refreshes: nothing new (dbt never starts), a new run (a build), nothing
    new again, and a rebuild, which starts from the partial parse the build before it kept."""
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
    after = read_version(home / "benchmarks.duckdb")["version"]
    assert after > before
    assert (home / "build" / "dbt-target" / "partial_parse.msgpack").exists()  # dbt's own, kept for the next build

    # and the refresh after that has nothing new again
    proc = run_benchwh(home, "refresh", "--offline")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("nothing new:") and "build skipped" in proc.stdout and after in proc.stdout

    (home / "benchmarks.duckdb").unlink()  # nothing is new: without this, the build is skipped
    second = run_benchwh(home, "refresh", "--no-fetch")
    assert second.returncode == 0, second.stderr
    assert not any(m in dbt_log(home, second.stdout) for m in FULL_PARSE)
    # the values naming the build reach audit.build_info (env, not --vars)
    cols, rows = build_info(home / "benchmarks.duckdb")
    assert cols == [("version", "VARCHAR"), ("build_id", "VARCHAR"), ("build_started_at", "TIMESTAMP"),
                    ("code_revision", "VARCHAR"), ("default_context_tokens", "INTEGER")]
    version, build_id, _started, revision, _tokens = rows[0]
    assert version == read_version(home / "benchmarks.duckdb")["version"] and version.endswith(build_id[:8])
    assert version > after and revision not in ("unknown", "dev") and version != "dev"
    assert not (home / "build" / "building.duckdb").exists()  # moved to the run's file, then published

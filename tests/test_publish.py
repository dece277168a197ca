"""Publish, readers, history and rollback on real DuckDB files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import duckdb
import pytest

from ingest.locks import home_lock
from publish import publish as pub
from tests.helpers.pipeline import file_sha256, make_build, run_benchwh

READER = r"""
import json, sys, time, duckdb
db, stop, out, tables = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
lock_errors = missing = reads = 0
import os
while not os.path.exists(stop):
    try:
        con = duckdb.connect(db, read_only=True)
        for t in tables:
            try:
                con.execute(f"SELECT count(*) FROM {t}").fetchall()
                reads += 1
            except duckdb.CatalogException:
                missing += 1
        con.close()
    except duckdb.IOException as exc:
        lock_errors += 1
    time.sleep(0.01)  # many reads in any window a publish could block, and the publishes keep a core
json.dump({"lock_errors": lock_errors, "missing": missing, "reads": reads}, open(out, "w"))
"""


def test_readers_never_blocked_while_publishing(warehouse_copy, monkeypatch, tmp_path):
    home = warehouse_copy
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    tables = ["marts.fct_api_prices", "marts.fct_grid_intensity", "audit.quarantine"]
    stop = tmp_path / "stop"
    readers = []
    for i in range(2):  # one per core, reading every ~10 ms while the publishes run
        out = tmp_path / f"reader{i}.json"
        readers.append((out, subprocess.Popen([sys.executable, "-c", READER, str(home / "benchmarks.duckdb"),
                                               str(stop), str(out), ",".join(tables)])))
    versions = [f"29990101T0000{i:02d}000000Z-test" for i in range(10)]
    try:
        time.sleep(1.0)
        for v in versions:
            pub.publish(make_build(home, v), {}, lambda m: None, if_changed=False)  # same tables each time
        time.sleep(0.5)
    finally:  # a failed publish leaves no reader behind
        stop.touch()
        for _, proc in readers:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:  # it writes no counts, so the test fails below
                proc.kill()
                proc.wait()
    totals = {"lock_errors": 0, "missing": 0, "reads": 0}
    for out, _ in readers:
        for k, v in json.loads(out.read_text()).items():
            totals[k] += v
    assert totals["lock_errors"] == 0 and totals["missing"] == 0, totals
    assert totals["reads"] > 0
    assert pub.read_version(home / "benchmarks.duckdb")["version"] == versions[-1]
    assert not (home / "benchmarks.duckdb.wal").exists()
    assert len(pub.list_history()) == pub.HISTORY_KEEP  # only the last 7 are kept
    assert pub.list_history()[-1] == versions[-1]


def test_publish_refuses_an_older_build(warehouse_copy, monkeypatch):
    home = warehouse_copy
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    before = file_sha256(home / "benchmarks.duckdb")
    with pytest.raises(pub.PublishError, match="older"):
        pub.publish(make_build(home, "19990101T000000000000Z-old"), {}, lambda m: None)
    assert file_sha256(home / "benchmarks.duckdb") == before


def test_audit_refuses_views_and_stray_schemas(warehouse_copy, monkeypatch):
    home = warehouse_copy
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    build = make_build(home, "29990101T000000000000Z-view")
    con = duckdb.connect(str(build))
    con.execute("CREATE VIEW marts.v AS SELECT 1 AS x")
    con.close()
    with pytest.raises(pub.PublishError, match="views"):
        pub.publish(build, {}, lambda m: None)


def test_rollback_and_status_cli(warehouse_copy, monkeypatch):
    home = warehouse_copy
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    first = pub.read_version(home / "benchmarks.duckdb")["version"]
    second = "29990101T000000000000Z-second"
    pub.publish(make_build(home, second), {}, lambda m: None, if_changed=False)
    assert pub.read_version(home / "benchmarks.duckdb")["version"] == second

    proc = run_benchwh(home, "rollback")
    assert proc.returncode == 0, proc.stderr
    assert pub.read_version(home / "benchmarks.duckdb")["version"] == first
    manifest = json.loads((home / "exports" / "manifest.json").read_text())
    assert manifest["version"] == first

    proc = run_benchwh(home, "rollback", "no-such-version")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("benchwh: unknown version no-such-version")
    assert len(proc.stderr.strip().splitlines()) == 1

    proc = run_benchwh(home, "status")
    assert proc.returncode == 0, proc.stderr
    assert first in proc.stdout and "openrouter" in proc.stdout and "grid" in proc.stdout
    status = json.loads(run_benchwh(home, "status", "--json").stdout)
    assert status["published"]["version"] == first
    assert status["sources"]["openrouter"]["rows_landed"] > 0
    # the "-1" router prices are landed as "no fixed price" (not quarantined), so counted as landed
    assert status["sources"]["openrouter"]["rows_quarantined"] == 0


def test_user_errors_are_one_line(tmp_path):
    proc = run_benchwh(tmp_path / "warehouse", "refresh", "--source", "nope")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("benchwh: unknown source 'nope'")
    assert "Traceback" not in proc.stderr


def test_refreshes_are_serialised_by_the_home_lock(tmp_path, monkeypatch):
    """A second refresh waits for the first: the lock `run_refresh` takes blocks another process."""
    monkeypatch.setenv("BENCHWH_HOME", str(tmp_path))
    child = (
        "import sys, time\n"
        "from ingest.locks import home_lock\n"
        "with home_lock('refresh', lambda m: print(m, flush=True)):\n"
        "    print('acquired', time.monotonic(), flush=True)\n"
    )
    with home_lock("refresh"):
        proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "BENCHWH_HOME": str(tmp_path)})
        first = proc.stdout.readline().strip()
        # the waiter names the holder: this process, and when it took the lock
        assert first.startswith(f"waiting for another refresh to finish (pid {os.getpid()} since "), first
        time.sleep(0.5)
        assert proc.poll() is None  # still blocked while we hold the lock
        released = time.monotonic()
    out, _ = proc.communicate(timeout=30)
    acquired_at = float(out.split()[-1])
    assert acquired_at >= released


def test_a_waiter_gives_up_naming_the_holder(tmp_path, monkeypatch):
    """Issue 53 item 2: a refresh never waits for good; `runs add` takes the same lock, so it waits
    for a refresh (and gives up the same way) instead of landing beside it."""
    home = tmp_path / "warehouse"
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    run_file = tmp_path / "run.json"
    run_file.write_text("[]")
    with home_lock("refresh"):
        proc = run_benchwh(home, "refresh", "--no-fetch", BENCHWH_LOCK_WAIT_S="1")
        assert proc.returncode == 1, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith(f"benchwh: another refresh holds .refresh.lock (pid {os.getpid()} since "), last
        assert "gave up after 1 s (BENCHWH_LOCK_WAIT_S)" in last
        added = run_benchwh(home, "runs", "add", "--no-publish", str(run_file), BENCHWH_LOCK_WAIT_S="1")
        assert added.returncode == 1 and "another refresh holds .refresh.lock" in added.stderr, added.stderr
        assert not (home / "raw" / "runs").exists()  # nothing landed beside the holder
    bad = run_benchwh(home, "status", BENCHWH_LOCK_WAIT_S="soon")
    assert bad.returncode == 2 and "BENCHWH_LOCK_WAIT_S='soon'" in bad.stderr


def test_a_rollback_or_publish_rebuilds_the_homes_site(warehouse_copy, monkeypatch):
    """A home with a built site never shows an older version than the published one."""
    from bs4 import BeautifulSoup

    home = warehouse_copy
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    first = pub.read_version(home / "benchmarks.duckdb")["version"]
    second = "29990101T000000000000Z-site"
    pub.publish(make_build(home, second), {}, lambda m: None, if_changed=False)

    def shown() -> str:
        page = BeautifulSoup((home / "site" / "index.html").read_text(), "html.parser")
        return page.select_one("footer.provenance")["data-version"]

    assert run_benchwh(home, "rollback").returncode == 0
    assert not (home / "site").exists()  # no site in the home: none is made
    assert run_benchwh(home, "site", "build").returncode == 0
    assert shown() == first
    proc = run_benchwh(home, "rollback", second)  # forward again, to the newer version
    assert proc.returncode == 0, proc.stderr
    assert "site rebuilt:" in proc.stderr + proc.stdout
    assert shown() == second
    # a site that cannot be rebuilt leaves the rollback standing and says so in one line
    (home / "exports" / "manifest.json").write_text("{not json")
    proc = run_benchwh(home, "rollback", first)
    assert proc.returncode == 0, proc.stderr
    assert pub.read_version(home / "benchmarks.duckdb")["version"] == first

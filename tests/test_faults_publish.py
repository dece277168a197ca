"""Issue #12 items 1, 6 (published blocks), 7 and 11: history and rollback never publish a torn or
damaged file, a garbled published header does not block rollback, abandoned temporaries are swept."""
from __future__ import annotations

import json
import os
import subprocess
import sys


from publish import publish as pub
from publish import verify
from tests.helpers.faults import files_outside
from tests.helpers.locks import lock_held_elsewhere
from tests.helpers.pipeline import BENCHWH, benchwh_env, file_sha256, run_benchwh
from tests.helpers.pipeline import make_build

PUBLISH_WITH_FAULT = """
import sys
from pathlib import Path
from publish.publish import publish
publish(Path(sys.argv[1]), {}, print, if_changed=False)  # the same tables as published: copied all the same
"""


def _index(home):
    return json.loads((home / "history" / "index.json").read_text())["versions"]


def test_sigkill_during_history_copy_leaves_no_torn_history_file(warehouse_copy, monkeypatch):
    home = warehouse_copy
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    before, outside = file_sha256(home / "benchmarks.duckdb"), files_outside(home)
    history_before = {p.name: file_sha256(p) for p in (home / "history").glob("*.duckdb")}
    newer = "29990101T000000000000Z-killed"
    build = make_build(home, newer)
    proc = subprocess.run([sys.executable, "-c", PUBLISH_WITH_FAULT, str(build)], capture_output=True, text=True,
                          env=benchwh_env(home, BENCHWH_FAULT="history-copy"), timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]  # killed mid-copy, as the probe did
    assert file_sha256(home / "benchmarks.duckdb") == before
    # no torn file under a final name: history holds exactly what it held, each file as indexed
    assert {p.name: file_sha256(p) for p in (home / "history").glob("*.duckdb")} == history_before
    assert all(_index(home)[p[:-7]]["sha256"] == sha for p, sha in history_before.items())
    leftovers = list((home / "history").glob(".*.tmp*"))
    assert leftovers, "the killed copy should have left its temporary file"
    # rollback cannot pick the half-copied version
    proc = run_benchwh(home, "rollback", newer)
    assert proc.returncode == 2 and "unknown version" in proc.stderr
    # the next holder of the refresh lock sweeps the dead process's temporary
    assert verify.sweep_temporaries() >= 1
    assert not list((home / "history").glob(".*.tmp*"))
    assert files_outside(home) == outside


def test_a_publish_killed_before_its_replace_is_never_rolled_back_to(warehouse_copy, monkeypatch):
    """Issue 53 item 6: the history copy of a publish killed just before the replace was never
    published; after the next publish, `rollback` skips it (and names it when asked for it) and
    restores the version published before."""
    home = warehouse_copy
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    current = pub.read_version(home / "benchmarks.duckdb")["version"]
    killed = "29990101T000000000000Z-killed"
    build = make_build(home, killed)
    proc = subprocess.run([sys.executable, "-c", PUBLISH_WITH_FAULT, str(build)], capture_output=True, text=True,
                          env=benchwh_env(home, BENCHWH_FAULT="publish-before-replace"), timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert pub.read_version(home / "benchmarks.duckdb")["version"] == current
    assert (home / "history" / f"{killed}.duckdb").exists() and _index(home)[killed]["published"] is False
    assert _index(home)[current].get("published", True) is not False  # what it is published stays so
    # its release folder was complete before the replace, but latest.json still names what is published
    assert json.loads((home / "exports" / "latest.json").read_text())["version"] == current
    # the next publish succeeds: rolling it back restores what was published before it, not the
    # killed copy between them (which holds the same rows, so it would undo nothing)
    after = "29990102T000000000000Z-after"
    pub.publish(make_build(home, after), {}, lambda m: None, if_changed=False)
    asked = run_benchwh(home, "rollback", killed)
    assert asked.returncode == 2 and "was never published" in asked.stderr, asked.stderr
    proc = run_benchwh(home, "rollback")
    assert proc.returncode == 0, proc.stderr
    assert f"published version is now {current}" in proc.stdout


def _garble_header(path):
    with open(path, "r+b") as fh:
        fh.seek(0)
        fh.write(b"\x00garbled\x00" * 64)


def test_garbled_published_header_is_reported_and_rollback_restores_newest_good(warehouse_copy):
    home = warehouse_copy
    outside = files_outside(home)
    version = pub.read_version(home / "benchmarks.duckdb")["version"]
    good_sha = file_sha256(home / "history" / f"{version}.duckdb")
    _garble_header(home / "benchmarks.duckdb")

    status = run_benchwh(home, "status")
    assert status.returncode == 1 and "DAMAGED" in status.stdout, status.stdout + status.stderr
    assert "Traceback" not in status.stderr
    proc = run_benchwh(home, "rollback")
    assert proc.returncode == 0, proc.stderr
    assert f"published version is now {version}" in proc.stdout
    assert file_sha256(home / "benchmarks.duckdb") == good_sha == _index(home)[version]["sha256"]
    assert run_benchwh(home, "status", "--verify").returncode == 0
    assert files_outside(home) == outside


def test_rollback_refuses_a_torn_history_file(warehouse_copy):
    """The probe's torn history file (an old build's half copy): rollback names it and publishes nothing."""
    home = warehouse_copy
    before = file_sha256(home / "benchmarks.duckdb")
    current = pub.read_version(home / "benchmarks.duckdb")["version"]
    torn = home / "history" / "20000101T000000000000Z-torn.duckdb"
    body = (home / "history" / f"{current}.duckdb").read_bytes()
    torn.write_bytes(body[: len(body) // 7])
    proc = run_benchwh(home, "rollback")
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("benchwh: no good version to roll back to") and "torn" in last
    assert "Traceback" not in proc.stderr
    assert file_sha256(home / "benchmarks.duckdb") == before


def test_flipped_byte_in_published_file_fails_status_verify(warehouse_copy):
    home = warehouse_copy
    published = home / "benchmarks.duckdb"
    assert run_benchwh(home, "status", "--verify").returncode == 0
    size = published.stat().st_size
    with open(published, "r+b") as fh:  # one byte inside a data block in the middle of the file
        fh.seek(size // 2)
        b = fh.read(1)
        fh.seek(size // 2)
        fh.write(bytes([b[0] ^ 0x01]))
    cheap = run_benchwh(home, "status")
    full = run_benchwh(home, "status", "--verify")
    for proc in (cheap, full):
        assert proc.returncode == 1 and "DAMAGED" in proc.stdout, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr


def test_sweep_removes_abandoned_temporaries_but_not_a_live_process(tmp_path, monkeypatch):
    home = tmp_path / "warehouse"
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    raw = home / "raw" / "openrouter" / "2026" / "11" / "30"
    raw.mkdir(parents=True)
    stale = [raw / f"abc.json.tmp{dead}", home / ".rollback-2026-x.duckdb", home / ".rollback-2026.tmp9.duckdb",
             home / "history" / f".v.duckdb.tmp{dead}"]
    live = raw / f"def.json.tmp{os.getpid()}"
    (home / "history").mkdir()
    for p in stale + [live]:
        p.write_bytes(b"partial")
    # a release folder a dead publish was writing, and one a live process writes
    dead_release = home / "exports" / "releases" / f".29990101T000000000000Z-x.tmp{dead}"
    live_release = home / "exports" / "releases" / f".29990101T000000000000Z-y.tmp{os.getpid()}"
    for folder in (dead_release, live_release):
        folder.mkdir(parents=True)
        (folder / "fct_api_prices.parquet").write_bytes(b"partial")
    assert verify.sweep_temporaries() == len(stale) + 1
    assert not any(p.exists() for p in stale) and not dead_release.exists()
    assert live.exists() and (live_release / "fct_api_prices.parquet").exists()


def test_build_files_of_a_live_dbt_are_not_cleaned(tmp_path, monkeypatch):
    """While a dbt build holds the home's build lock (orchestration/dbt_assets.py), nothing in build/
    is pulled from under it; once the lock is free, the files it left are abandoned and cleaned."""
    home = tmp_path / "warehouse"
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    build = home / "build"
    build.mkdir(parents=True)
    with lock_held_elsewhere(home, "build"):
        (build / "building.duckdb").write_bytes(b"x")
        (build / "building.duckdb.wal").write_bytes(b"x")
        assert pub.clean_abandoned_builds() == 0
        assert (build / "building.duckdb").exists() and (build / "building.duckdb.wal").exists()
    assert pub.clean_abandoned_builds() == 2
    assert not list(build.iterdir())


def test_status_into_a_closed_pipe(tmp_path):
    """`benchwh status | head`: the reader is gone before status writes; no BrokenPipeError."""
    proc = subprocess.Popen([BENCHWH, "status"],
                            env=benchwh_env(tmp_path / "warehouse"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # like `head` that has already exited
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "BrokenPipeError" not in err and "Traceback" not in err, err
    assert proc.returncode == 141


def test_refresh_replaces_a_published_file_with_a_garbled_header(warehouse_copy):
    home = warehouse_copy
    outside = files_outside(home)
    _garble_header(home / "benchmarks.duckdb")
    proc = run_benchwh(home, "refresh", "--no-fetch")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "published file damaged" in proc.stderr
    version = pub.read_version(home / "benchmarks.duckdb")["version"]
    assert file_sha256(home / "benchmarks.duckdb") == _index(home)[version]["sha256"]
    assert run_benchwh(home, "status", "--verify").returncode == 0
    assert files_outside(home) == outside

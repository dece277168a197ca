"""Issue #12 item 10: a full disk (a 30 MB tmpfs) fails the refresh with one line naming the path
and the free space, removes the partial build files, and publishes nothing."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.helpers.faults import files_outside
from tests.helpers.pipeline import file_sha256, run_benchwh

pytestmark = pytest.mark.slow


def tmpfs(mnt, size: str):
    """A tmpfs of `size` mounted on the folder `mnt` while the test runs (skips without root)."""
    if os.geteuid() != 0:
        pytest.skip(f"mounting a {size} tmpfs needs root")
    mnt.mkdir(parents=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    yield from tmpfs(tmp_path / "tmpfs", "30m")


def test_disk_full_is_one_line_and_leaves_no_partial_files(offline_warehouse, small_disk):
    home = small_disk / "warehouse"
    home.mkdir()
    # raw and landing fit; the build (13 MB), its history copy and the published file do not
    for part in ("raw", "landing"):
        shutil.copytree(offline_warehouse / part, home / part)
    before, outside = file_sha256(home / "benchmarks.duckdb"), files_outside(home)
    proc = run_benchwh(home, "refresh", "--no-fetch")
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("benchwh: refresh failed: ") and "disk full writing " + str(home) in last, proc.stderr[-3000:]
    assert "MB free)" in last
    assert "Traceback" not in proc.stderr
    assert file_sha256(home / "benchmarks.duckdb") == before
    leftovers = [p for p in home.rglob("*") if p.is_file() and (
        p.suffix in (".duckdb", ".wal") and p.parent.name in ("build", "history")
        or ".tmp" in p.name)]
    assert leftovers == [], leftovers
    assert files_outside(home) == outside


def test_a_full_disk_under_the_dbt_log_is_one_line_naming_the_log(warehouse_copy):
    """logs/ on a disk of 12 kB: the build itself has room, dbt's log does not. dagster-dbt's stream
    printed a traceback when writing the log failed inside it; the refresh fails with one line
    naming the log and that disk's free space, and publishes nothing."""
    home = warehouse_copy
    (home / "benchmarks.duckdb").unlink()  # the refresh builds
    shutil.rmtree(home / "logs", ignore_errors=True)
    outside, history = files_outside(home), sorted((home / "history").glob("*.duckdb"))
    for _ in tmpfs(home / "logs", "12k"):
        proc = run_benchwh(home, "refresh", "--no-fetch")
        assert proc.returncode == 1, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr[-3000:]
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith(f"benchwh: refresh failed: disk full writing {home / 'logs'}/dbt-"), last
        assert ".log (0.0 MB free)" in last, last
    assert not (home / "benchmarks.duckdb").exists()
    assert sorted((home / "history").glob("*.duckdb")) == history
    assert [p for p in (home / "build").glob("*") if p.suffix in (".duckdb", ".wal")] == []
    assert files_outside(home) == outside

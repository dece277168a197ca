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


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a 30 MB tmpfs needs root")
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=30m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


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

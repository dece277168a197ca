"""SIGKILL mid-build: nothing published, no .wal; the next good refresh cleans up and publishes."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tests.helpers.faults import SOURCES, assert_failed_cleanly, published, site  # noqa: F401 (fixtures)
from tests.helpers.pipeline import BENCHWH, benchwh_env, file_sha256, run_benchwh

pytestmark = pytest.mark.slow


def test_sigkill_mid_build_then_recovery(published, site):
    _, _, env = site
    home = published
    before = file_sha256(home / "benchmarks.duckdb")
    proc = subprocess.Popen([BENCHWH, "refresh", "--no-fetch"], env=benchwh_env(home, **env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not list((home / "build").glob("*.duckdb")):
        time.sleep(0.05)
    assert list((home / "build").glob("*.duckdb")), "the build never started"
    time.sleep(1.0)  # let dbt write into it
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert file_sha256(home / "benchmarks.duckdb") == before
    assert not (home / "benchmarks.duckdb.wal").exists()
    assert list((home / "build").iterdir()), "expected the killed run's build to be left for cleanup"

    good = run_benchwh(home, "refresh", *SOURCES, **env)
    assert good.returncode == 0, good.stderr[-3000:]
    assert "cleaned" in good.stderr
    assert not list((home / "build").glob("*.duckdb"))
    assert file_sha256(home / "benchmarks.duckdb") != before

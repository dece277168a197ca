"""Issue #12 item 9: a SIGKILL of the refresh process takes its dbt child with it (benchwh-dbt,
PR_SET_PDEATHSIG), so nothing keeps writing into build/ while the next refresh cleans it."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from publish import publish as pub
from tests.helpers.faults import files_outside
from tests.helpers.pipeline import BENCHWH, benchwh_env, file_sha256

pytestmark = pytest.mark.slow


def _alive(pid: int) -> bool:
    from publish.verify import pid_alive

    return pid_alive(pid)


def test_dbt_dies_with_a_killed_refresh(warehouse_copy, monkeypatch):
    home = warehouse_copy
    before, outside = file_sha256(home / "benchmarks.duckdb"), files_outside(home)
    proc = subprocess.Popen([BENCHWH, "refresh", "--no-fetch"], env=benchwh_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        pid_files = []
        build = home / "build"
        # killed once dbt is writing its build file, as in the probe
        while time.monotonic() < deadline and proc.poll() is None and not (
                build.exists() and list(build.glob("*.duckdb")) and list(build.glob("*.duckdb.pid"))):
            time.sleep(0.05)
        pid_files = list(build.glob("*.duckdb.pid")) if build.exists() else []
        assert pid_files, "dbt never started under benchwh-dbt"
        dbt_pid = int(pid_files[0].read_text().split()[0])
        assert dbt_pid != proc.pid and _alive(dbt_pid)
        os.kill(proc.pid, signal.SIGKILL)  # the refresh only, as the probe did: not its process group
        proc.wait(timeout=30)
        for _ in range(600):
            if not _alive(dbt_pid):
                break
            time.sleep(0.05)
        assert not _alive(dbt_pid), "dbt outlived the refresh that started it"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert file_sha256(home / "benchmarks.duckdb") == before
    monkeypatch.setenv("BENCHWH_HOME", str(home))
    assert any(p.suffix == ".duckdb" for p in (home / "build").iterdir()), "the killed build should be there"
    assert pub.clean_abandoned_builds() >= 1  # dbt is gone, so its files are cleaned
    assert not list((home / "build").iterdir())
    assert files_outside(home) == outside

"""Issue #12 item 9: a SIGKILL of the refresh process takes its dbt with it (benchwh-dbt,
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


def dbt_builds_of(home) -> list[int]:
    """Pids of the `dbt build` processes running for this home (benchwh-dbt execs the stock dbt, so
    its command line is dbt's, and BENCHWH_HOME in its environment names the home)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = open(f"/proc/{entry.name}/cmdline", "rb").read().split(b"\0")
            environ = open(f"/proc/{entry.name}/environ", "rb").read().split(b"\0")
        except OSError:
            continue  # exited, or not ours to read
        is_dbt = any(a.endswith(b"/dbt") for a in argv[:2]) and b"build" in argv
        if is_dbt and f"BENCHWH_HOME={home}".encode() in environ:
            pids.append(int(entry.name))
    return pids


def test_dbt_dies_with_a_killed_refresh(warehouse_copy, monkeypatch):
    home = warehouse_copy
    before, outside = file_sha256(home / "benchmarks.duckdb"), files_outside(home)
    proc = subprocess.Popen([BENCHWH, "refresh", "--no-fetch"], env=benchwh_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        building, dbt_pids = home / "build" / "building.duckdb", []
        # killed once dbt is writing its build file, as in the probe
        while time.monotonic() < deadline and proc.poll() is None and not (
                building.exists() and (dbt_pids := dbt_builds_of(home))):
            time.sleep(0.05)
        assert dbt_pids, "dbt never started writing build/building.duckdb"
        dbt_pid, = dbt_pids
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
    # dbt is gone, so its files are cleaned once the killed step's build lock is released too
    deadline = time.monotonic() + 60
    while not (cleaned := pub.clean_abandoned_builds()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cleaned >= 1
    assert sorted(p.name for p in (home / "build").iterdir()) == ["dbt-target"]
    assert files_outside(home) == outside

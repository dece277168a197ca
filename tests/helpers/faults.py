"""Shared pieces of the fault tests (tests/test_faults_*.py): a loopback OpenRouter + grid, a private
copy of the offline warehouse, and what "failed cleanly" means."""
from __future__ import annotations

import json

import pytest

from tests.helpers.live import Resource, recorded_body
from tests.helpers.loopback import LoopbackServer
from tests.helpers.pipeline import file_sha256


SOURCES = ("--source", "openrouter", "--source", "grid")


@pytest.fixture(scope="module")
def site():
    """A loopback OpenRouter + grid whose /models answer the test can change."""
    state = {"models": Resource(recorded_body("openrouter"), '"m1"', "application/json")}
    with LoopbackServer() as srv:
        srv.route("/api/v1/models", lambda req: state["models"](req))
        srv.route("/data/grid.csv", Resource(recorded_body("grid"), '"g1"', "text/csv"))
        env = {"BENCHWH_OPENROUTER_URL": srv.url + "/api/v1", "BENCHWH_GRID_URL": srv.url + "/data/grid.csv"}
        yield srv, state, env


@pytest.fixture(scope="module")
def published(offline_warehouse, tmp_path_factory):
    """A private copy of the offline warehouse; the faults below share it, in order."""
    import shutil

    home = tmp_path_factory.mktemp("faults") / "warehouse"
    shutil.copytree(offline_warehouse, home, ignore=shutil.ignore_patterns("dagster", "*.lock"))
    return home


def assert_failed_cleanly(home, proc, sha_before, expect: str, traceback_ok: bool = False):
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("benchwh: refresh failed:"), proc.stderr[-2000:]
    assert expect in last, last
    assert traceback_ok or "Traceback" not in proc.stderr
    assert file_sha256(home / "benchmarks.duckdb") == sha_before
    assert not (home / "benchmarks.duckdb.wal").exists()
    assert not list((home / "build").glob("*.duckdb")), "the abandoned build was left behind"


def models_payload(mutate) -> bytes:
    doc = json.loads(recorded_body("openrouter"))
    mutate(doc)
    return json.dumps(doc).encode()




def files_outside(home) -> set[str]:
    """Every path beside the warehouse home (its parent folder, home excluded): nothing may appear there."""
    import os

    parent = home.parent
    out = set()
    for folder, dirs, files in os.walk(parent):
        if folder == str(parent):
            dirs[:] = [d for d in dirs if d != home.name]
        out.update(os.path.join(folder, n) for n in dirs + files)
    return out

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.paths import SHARED_DATA


def pytest_collection_modifyitems(session, config, items) -> None:
    """Longest files first (tests/durations.json, seconds per file of a whole run), so that under
    `--dist loadfile --no-loadscope-reorder` no long file starts last and forms the tail. Each
    file's tests stay together and in their own order; files not listed go last, as collected."""
    import json

    weights = json.loads((Path(__file__).parent / "durations.json").read_text())
    rank = {}
    for item in items:
        rank.setdefault(item.nodeid.split("::", 1)[0], len(rank))
    items.sort(key=lambda item: (-weights.get(item.nodeid.split("::", 1)[0], 0.0),
                                 rank[item.nodeid.split("::", 1)[0]]))


def pytest_sessionstart(session) -> None:
    """Tests load the Dagster definitions, which read a prepared dbt manifest (never parsed on
    import): prepare it as `make install` does, parsing only when the dbt project changed."""
    from orchestration.manifest import prepare_manifest

    prepare_manifest()


@pytest.fixture
def shared_data() -> Path:
    """The real public data beside the project; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh warehouse home for one test, with no source URL pointing at the internet."""
    wh = tmp_path / "warehouse"
    wh.mkdir()
    monkeypatch.setenv("BENCHWH_HOME", str(wh))
    monkeypatch.setenv("BENCHWH_MAX_RPS", "1000")
    for var in ("BENCHWH_LOCALSCORE_URL", "BENCHWH_OPENROUTER_URL", "BENCHWH_HF_URL", "BENCHWH_GRID_URL"):
        monkeypatch.setenv(var, "http://127.0.0.1:9/unset")
    return wh


@pytest.fixture(scope="session")
def offline_warehouse(tmp_path_factory) -> Path:
    """One `benchwh refresh --offline` (with the dbt unit tests) shared by every test worker.

    Read it, never change it: copy it first (`warehouse_copy`).
    """
    import fcntl
    import json

    from tests.helpers.pipeline import run_benchwh

    import os

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # common to this run's workers
    home = shared / "offline-warehouse"
    with open(shared / "offline-warehouse.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        outcome = shared / "offline-warehouse.json"
        if not outcome.exists():
            proc = run_benchwh(home, "refresh", "--offline", BENCHWH_DBT_UNIT_TESTS="1")
            outcome.write_text(json.dumps({"returncode": proc.returncode, "stdout": proc.stdout,
                                           "stderr": proc.stderr[-5000:]}))
        result = json.loads(outcome.read_text())
    assert result["returncode"] == 0, result["stderr"]
    return home


@pytest.fixture
def warehouse_copy(offline_warehouse, tmp_path) -> Path:
    """A private copy of the offline warehouse (raw, landing, published file, history)."""
    import shutil

    target = tmp_path / "warehouse"
    shutil.copytree(offline_warehouse, target, ignore=shutil.ignore_patterns("dagster", "*.lock"))
    return target

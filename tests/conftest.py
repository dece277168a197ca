from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.paths import SHARED_DATA


def pytest_collection_modifyitems(session, config, items) -> None:
    """Longest files first (tests/durations.json, seconds per file of a whole run, written by
    `python -m tests.helpers.durations RUN.xml`), so that under
    `--dist loadfile --no-loadscope-reorder` no long file starts last and forms the tail. While the
    first file builds the shared offline warehouse, the other workers start on the longest files
    that do not need it. Each file's tests stay together and in their own order."""
    import json
    import os

    weights = json.loads((Path(__file__).parent / "durations.json").read_text())
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(files, key=lambda f: -weights.get(f, 0.0))  # stable: unlisted files as collected
    needs_build = {f for f, its in files.items() if any("offline_warehouse" in i.fixturenames for i in its)}
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1 and needs_build:
        first = next(f for f in order if f in needs_build)
        others = [f for f in order if f not in needs_build][:workers]
        order = [first, *others] + [f for f in order if f != first and f not in others]
    items[:] = [item for f in order for item in files[f]]


def pytest_sessionstart(session) -> None:
    """Tests load the Dagster definitions, which read a prepared dbt manifest (never parsed on
    import): prepare it as `make install` does, parsing only when the dbt project changed."""
    import warnings

    with warnings.catch_warnings():
        # dagster-dbt requires sqlglot[rs], whose sqlglotrs warns on import that it is deprecated:
        # a line atop every worker's output that nothing here can act on
        warnings.filterwarnings("ignore", message="sqlglotrs is deprecated", category=DeprecationWarning)
        from orchestration.manifest import prepare_manifest

    prepare_manifest()


@pytest.fixture(autouse=True)
def environment_restored():
    """What a test leaves in os.environ ends with it: a job run in the test's process sets the
    build's dbt settings for its process (orchestration/dbt_assets.py), as a refresh does, and a
    later test in the same worker would otherwise run its dbt with them."""
    import os

    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(autouse=True)
def signal_handlers_restored():
    """A test's signal handlers end with it. Dagster maps SIGTERM to SIGINT's handler when an
    in-process run ends (dagster._utils.interrupts), and pytest-xdist's workers ignore SIGINT: the
    worker then ignored SIGTERM too, so did every process a later test started, and
    `benchwh site serve` outlived its SIGTERM (test_site_browser, in a suite run)."""
    import signal

    kept = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    saved = {sig: signal.getsignal(sig) for sig in kept}
    yield
    for sig, handler in saved.items():
        if signal.getsignal(sig) != handler:
            signal.signal(sig, handler)


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

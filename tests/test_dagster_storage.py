"""benchwh's Dagster instance keeps one sqlite connection per database (orchestration/dagster_storage.py):
connections do not grow with the events a run stores, another process (the UI) reads and writes the same
files meanwhile, and disposing the instance closes every file."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from orchestration.dagster_storage import PooledSqliteEventLogStorage, PooledSqliteRunStorage
from orchestration.instance import dagster_yaml, ensure_dagster_home

PROJECT_ROOT = Path(__file__).resolve().parent.parent

CHECK = dg.AssetCheckKey(dg.AssetKey("numbers"), "counted")


@dg.asset(check_specs=[dg.AssetCheckSpec("counted", asset="numbers")], config_schema={"n": int})
def numbers(context):
    """n observations (each stored in the run's db and mirrored in the index db), a
    materialization and a check evaluation."""
    for i in range(context.op_execution_context.op_config["n"]):
        context.log_event(dg.AssetObservation(asset_key="numbers", metadata={"i": i}))
    yield dg.Output(context.op_execution_context.op_config["n"])
    yield dg.AssetCheckResult(check_name="counted", passed=True)


def materialize(instance, n: int) -> str:
    result = dg.materialize([numbers], instance=instance, run_config={"ops": {"numbers": {"config": {"n": n}}}})
    assert result.success
    return result.run_id


@pytest.fixture
def dagster_home(home, monkeypatch) -> Path:
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))  # restored after the test
    return ensure_dagster_home()


class Connections:
    """New sqlite connections per database file, from SQLAlchemy's connect event (every engine)."""

    def __init__(self, root: Path):
        self.root, self.by_file, self.lock = str(root), Counter(), threading.Lock()

    def __call__(self, dbapi_connection, _record) -> None:
        path = dbapi_connection.execute("PRAGMA database_list").fetchall()[0][2]
        if path.startswith(self.root):
            with self.lock:
                self.by_file[Path(path).name] += 1

    def __enter__(self):
        event.listen(Engine, "connect", self)
        return self

    def __exit__(self, *exc) -> None:
        event.remove(Engine, "connect", self)

    def kinds(self, run_id: str) -> dict:
        return {("run" if name == f"{run_id}.db" else name): count for name, count in self.by_file.items()}


def open_files_under(root: Path) -> list[str]:
    fds = Path("/proc/self/fd")
    targets = []
    for fd in fds.iterdir():
        try:
            targets.append(os.readlink(fd))
        except OSError:
            pass
    return [t for t in targets if t.startswith(str(root))]


def test_connections_do_not_grow_with_the_events_a_run_stores(dagster_home):
    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
        assert isinstance(instance.run_storage, PooledSqliteRunStorage)
        materialize(instance, 2)  # the index and runs dbs are opened and kept from here on
        counted = {}
        for n in (2, 300):
            with Connections(dagster_home) as connections:
                run_id = materialize(instance, n)
            counted[n] = connections.kinds(run_id)
        events = len(instance.all_logs(run_id))
    assert events > 300
    # a new run's db: its connection, plus the ones Dagster's schema setup checks out beside it
    assert counted[300] == counted[2]
    assert set(counted[300]) == {"run"} and counted[300]["run"] <= 3, counted


READER = """
import json, sys
import dagster as dg
instance = dg.DagsterInstance.from_config(sys.argv[1])
key = dg.AssetKey("numbers")
check = instance.event_log_storage.get_asset_check_execution_history(dg.AssetCheckKey(key, "counted"), limit=10)
print(json.dumps({
    "storage": type(instance.event_log_storage).__name__,
    "runs": {r.run_id: r.status.value for r in instance.get_runs()},
    "events": {r.run_id: len(instance.all_logs(r.run_id)) for r in instance.get_runs()},
    "observations": len(instance.fetch_observations(key, limit=1000).records),
    "checks": sorted(c.run_id for c in check),
}))
instance.report_runless_asset_event(dg.AssetObservation(key, metadata={"from": "another process"}))
instance.dispose()
"""


def test_another_process_reads_and_writes_while_connections_are_kept(dagster_home):
    with dg.DagsterInstance.get() as instance:
        first, second = materialize(instance, 40), materialize(instance, 5)
        # this process keeps its connections open (the CLI while the UI reads): a fresh instance elsewhere
        seen = subprocess.run([sys.executable, "-c", READER, str(dagster_home)], cwd=PROJECT_ROOT,
                              capture_output=True, text=True, timeout=300)
        assert seen.returncode == 0, seen.stderr[-3000:]
        other = json.loads(seen.stdout.strip().splitlines()[-1])
        assert other["storage"] == "PooledSqliteEventLogStorage"
        assert other["runs"] == {first: "SUCCESS", second: "SUCCESS"}
        assert other["events"] == {first: len(instance.all_logs(first)), second: len(instance.all_logs(second))}
        assert other["observations"] == 45
        assert other["checks"] == sorted([first, second])
        # and what that process wrote is read through the connections kept here
        assert len(instance.fetch_observations(dg.AssetKey("numbers"), limit=1000).records) == 46
        assert open_files_under(dagster_home)  # kept open while the instance lives
    assert open_files_under(dagster_home) == []  # disposing the instance closed them all


def test_a_run_watched_elsewhere_sees_events_committed_through_a_kept_connection(dagster_home):
    """The UI's live run log: Dagster's watcher wakes when the run's .db changes; kept connections commit into its -wal."""
    with dg.DagsterInstance.get() as writer, dg.DagsterInstance.from_config(str(dagster_home)) as reader:
        run_id = materialize(writer, 1)
        seen, woke = [], threading.Event()

        def callback(entry, _cursor):
            seen.append(entry.dagster_event.message if entry.dagster_event else entry.user_message)
            if seen[-1] == "from the writer":
                woke.set()

        reader.event_log_storage.watch(run_id, None, callback)
        writer.report_engine_event("from the writer", writer.get_run_by_id(run_id))
        assert woke.wait(timeout=60), seen
        reader.event_log_storage.end_watch(run_id, callback)


OLDER_YAML = """\
# Written by benchwh: refresh runs are serialised (one publish at a time).
run_coordinator:
  module: orchestration.run_coordinator
  class: GuardedRunCoordinator
telemetry:
  enabled: false
"""


def test_a_dagster_yaml_from_an_older_benchwh_is_rewritten(home, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    (home / "dagster").mkdir()
    (home / "dagster" / "dagster.yaml").write_text(OLDER_YAML)
    ensure_dagster_home()
    assert (home / "dagster" / "dagster.yaml").read_text() == dagster_yaml(home / "dagster")
    assert "class: PooledSqliteStorage" in dagster_yaml(home / "dagster")

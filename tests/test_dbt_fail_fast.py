"""benchwh-dbt keeps the result of the node a --fail-fast build failed on (cli/dbt_guard.py).

dbt's worker thread marks the run to stop before the thread pool's callback records the failed
node's result; when the main thread stops first, dbt marks that node skipped like the nodes that
never ran, and the refresh said "dbt build failed (no failing node recorded)" without its rows
(seen once in `make test`). Here with dbt's own result objects and nodes of this project, and once
end to end with the pool's callback losing every failure.
"""
from __future__ import annotations

import json
import sys
import textwrap
import threading
import time

import duckdb
import pytest
from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.duckdb.credentials import DuckDBCredentials
from dbt.adapters.duckdb.environments.local import DuckDBConnectionWrapper, LocalEnvironment
from dbt.artifacts.schemas.results import RunStatus, TestStatus
from dbt.artifacts.schemas.run import RunResult
from dbt.contracts.graph.nodes import GenericTestNode, SingularTestNode
from dbt.exceptions import FailFastError
from dbt.task.runnable import GraphRunnableTask, mark_node_as_skipped

from cli.dbt_guard import (cancel_closed_connections_quietly, freeze_the_loaded_project, keep_the_fail_fast_result,
                           restore_failed_result, with_fail_fast_result)
from orchestration.manifest import MANIFEST_PATH
from tests.helpers.landing import land_recording

SKIPPED = "Skipping due to fail_fast"


@pytest.fixture(scope="module")
def tests_of_the_project() -> tuple:
    """Two data tests of this project as dbt's node objects (from the prepared manifest)."""
    nodes = json.loads(MANIFEST_PATH.read_text())["nodes"].values()
    singular = next(n for n in nodes if n["name"] == "assert_grid_intensity_is_physical")
    generic = next(n for n in nodes if n["name"] == "unique_key_fct_grid_intensity")
    return SingularTestNode.from_dict(singular), GenericTestNode.from_dict(generic)


def failed(node) -> RunResult:
    return RunResult(status=TestStatus.Fail, timing=[], thread_id="Thread-1", execution_time=0.03,
                     adapter_response={}, message="Got 1 result, configured to fail if != 0", failures=1,
                     node=node)


class Task:
    """What execute_nodes leaves behind: its results, and the failure that stopped the run."""

    def __init__(self, results: list, stop=None):
        self.node_results = results
        self._raise_next_tick = stop


def test_the_failure_replaces_its_skipped_mark(tests_of_the_project):
    physical, unique = tests_of_the_project
    failure = failed(physical)
    # as dbt leaves it when the main thread stopped before the callback recorded the failure
    results = [mark_node_as_skipped(physical, set(), SKIPPED), mark_node_as_skipped(unique, set(), SKIPPED)]
    task = Task(results, FailFastError(msg="Failing early", result=failure, node=physical))
    returned = with_fail_fast_result(lambda t: t.node_results)(task)
    assert returned is results  # the list dbt's on-run-end hooks read, fixed in place
    assert [r.status for r in results] == [TestStatus.Fail, RunStatus.Skipped]
    assert results[0] is failure


class RacingTask:
    """A --fail-fast run as seen under load: the failing node's thread returns its result, the stop
    cancels the node running beside it, whose thread then fails with "Interrupted!" and overwrites
    the stop; the pool's callback recorded neither and dbt marked both skipped."""

    def __init__(self, runs: list):
        self.runs = runs  # (node, result) in the order the threads return
        self.node_results: list = []
        self._raise_next_tick = None

    def call_runner(self, runner):
        node, result = runner
        self._raise_next_tick = FailFastError(msg="Failing early", result=result, node=node)
        return result

    def execute_nodes(self):
        for run in self.runs:
            self.call_runner(run)
        self.node_results = [mark_node_as_skipped(node, set(), SKIPPED) for node, _ in self.runs]
        return self.node_results


def test_the_first_failure_goes_back_when_a_cancelled_node_fails_after_it(tests_of_the_project):
    physical, unique = tests_of_the_project
    failure = failed(physical)
    interrupted = RunResult(status=RunStatus.Error, timing=[], thread_id="Thread-2", execution_time=0.01,
                            adapter_response={}, message="INTERRUPT Error: Interrupted!", failures=None, node=unique)
    task = RacingTask([(physical, failure), (unique, interrupted)])
    results = with_fail_fast_result(RacingTask.execute_nodes)(task)
    assert task._raise_next_tick.result is interrupted  # the stop names only the cancelled node
    assert results == [failure, interrupted]  # both back, each in place of its skipped mark
    assert "call_runner" not in vars(task)  # the noting wrapper lived for this run only


def test_a_recorded_failure_and_other_runs_are_left_as_they_are(tests_of_the_project):
    physical, unique = tests_of_the_project
    failure = failed(physical)
    recorded = [failure, mark_node_as_skipped(unique, set(), SKIPPED)]
    assert not restore_failed_result(recorded, failure)
    assert recorded[0] is failure and len(recorded) == 2

    missing = [mark_node_as_skipped(unique, set(), SKIPPED)]  # no mark at all: appended
    assert restore_failed_result(missing, failure) and missing[-1] is failure

    untouched = [mark_node_as_skipped(physical, set(), SKIPPED)]
    for stop in (None, RuntimeError("interrupted")):  # no fail-fast stop: nothing to restore
        with_fail_fast_result(lambda t: t.node_results)(Task(untouched, stop))
        assert untouched[0].status == RunStatus.Skipped


def test_benchwh_dbt_wraps_dbts_task_once(monkeypatch):
    dbts_own = GraphRunnableTask.execute_nodes
    monkeypatch.setattr(GraphRunnableTask, "execute_nodes", dbts_own)  # restored after
    assert keep_the_fail_fast_result() and freeze_the_loaded_project()
    assert keep_the_fail_fast_result() and freeze_the_loaded_project()
    wrapped = GraphRunnableTask.execute_nodes
    assert wrapped.keeps_fail_fast_result and wrapped.freezes_loaded_project
    chain = [wrapped]
    while chain[-1] is not dbts_own:
        chain.append(chain[-1].__wrapped__)
    assert len(chain) == 3  # each wrapper once, dbt's own method at the end


# dbt's pool callback drops every failed result: what happens when the main thread stops first
LOSE_FAILURES = textwrap.dedent("""
    import os
    import sys
    from dbt.task.runnable import GraphRunnableTask

    handle = GraphRunnableTask._handle_result

    def lose_failures(self, result):
        if str(result.status) not in ("fail", "error"):
            handle(self, result)

    GraphRunnableTask._handle_result = lose_failures
    os.environ["BENCHWH_DBT_SERVER"] = "0"  # dbt in this process, patched: not a warm server's worker
    sys.argv = ["benchwh-dbt", *sys.argv[1:]]
    from cli.dbt_guard import main
    main()
""")


def test_a_failure_the_pool_never_recorded_is_named_with_its_rows(tmp_path):
    from ingest.sources.grid import GridSource
    from tests.helpers.dbt_build import failed_dbt_build

    home = tmp_path / "warehouse"
    land_recording(home, GridSource())
    folder = home / "landing" / "grid" / "intensity"
    landed = next(p for p in folder.glob("*.parquet") if not p.name.startswith("_"))
    duckdb.sql(f"""
        COPY (SELECT * REPLACE ('Nullland' AS area, NULL::DOUBLE AS gco2_per_kwh) FROM read_parquet('{landed}') LIMIT 1)
        TO '{folder / "zz-null.parquet"}' (FORMAT parquet)""")
    reason = failed_dbt_build(home, tmp_path, ["stg_grid__intensities"], "--fail-fast",
                              dbt=[sys.executable, "-c", LOSE_FAILURES])
    assert "dbt fail in test.benchwh.not_null_columns_stg_grid__intensities." in reason, reason
    assert reason.endswith("failing rows: column_name=gco2_per_kwh, null_rows=1"), reason


def test_the_failure_is_named_not_a_node_fail_fast_interrupted(tmp_path):
    """--fail-fast cancels the nodes running beside the failure: their errors come first in the run
    results when the failing result was put back after them (seen in CI under load)."""
    import json

    from orchestration.dbt_assets import first_dbt_failure

    interrupted = {"unique_id": "test.benchwh.unique_x", "status": "error",
                   "message": "Runtime Error in test unique_x\n  INTERRUPT Error: Interrupted!"}
    failure = {"unique_id": "test.benchwh.not_null_columns_x", "status": "fail", "message": "Got 1 result"}
    (tmp_path / "target").mkdir()
    output = tmp_path / "out.log"
    output.write_text("failing rows of test.benchwh.not_null_columns_x: column_name=v, null_rows=1\n")
    for order in ([interrupted, failure], [failure, interrupted]):
        (tmp_path / "target" / "run_results.json").write_text(json.dumps({"results": order}))
        assert first_dbt_failure(tmp_path / "target", output) == (
            "dbt fail in test.benchwh.not_null_columns_x: Got 1 result; failing rows: column_name=v, null_rows=1")
    # only an interrupted node: still named
    (tmp_path / "target" / "run_results.json").write_text(json.dumps({"results": [interrupted]}))
    assert first_dbt_failure(tmp_path / "target", output).startswith("dbt error in test.benchwh.unique_x: ")


def _dbt_connection(cursor):
    """dbt's connection record around dbt-duckdb's own wrapper of `cursor`, as a node thread has it."""
    return Connection(type="duckdb", name="model.benchwh.stg_grid__intensities", state=ConnectionState.OPEN,
                      credentials=DuckDBCredentials(path=":memory:"), handle=DuckDBConnectionWrapper(cursor, None))


def dbt_duckdbs_own_cancel():
    """LocalEnvironment.cancel as dbt-duckdb has it, whether or not this process patched it."""
    cancel = LocalEnvironment.__dict__["cancel"]
    return getattr(cancel.__func__, "dbt_duckdb_cancel", cancel)


def test_cancelling_a_connection_its_thread_already_closed_is_no_error(monkeypatch):
    """A --fail-fast stop cancels the other threads' connections; one closed meanwhile raised
    "Connection already closed!", which replaced the node's failure (CI: test_dbt_model_error)."""
    monkeypatch.setattr(LocalEnvironment, "cancel", dbt_duckdbs_own_cancel())  # restored after the test
    con = duckdb.connect()
    closed = con.cursor()
    closed.close()
    with pytest.raises(duckdb.ConnectionException, match="closed"):
        LocalEnvironment.cancel(_dbt_connection(closed))  # dbt-duckdb as it comes
    assert cancel_closed_connections_quietly() and cancel_closed_connections_quietly()  # installed once
    LocalEnvironment.cancel(_dbt_connection(closed))
    con.close()


def test_a_running_query_is_still_cancelled(monkeypatch):
    monkeypatch.setattr(LocalEnvironment, "cancel", dbt_duckdbs_own_cancel())
    assert cancel_closed_connections_quietly()
    con = duckdb.connect()
    busy = con.cursor()
    outcome = []

    def run_long_query():
        try:
            busy.execute("select count(*) from range(100000000000) a")
            outcome.append("finished")
        except duckdb.InterruptException:
            outcome.append("interrupted")

    thread = threading.Thread(target=run_long_query)
    thread.start()
    deadline = time.monotonic() + 60
    while thread.is_alive() and not outcome and time.monotonic() < deadline:
        LocalEnvironment.cancel(_dbt_connection(busy))  # until the query has started and stops
        thread.join(0.05)
    thread.join(60)
    assert outcome == ["interrupted"]
    con.close()

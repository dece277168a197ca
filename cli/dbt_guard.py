"""`benchwh-dbt`: runs dbt so that it dies with the `benchwh` process that started it (issue #12).

A SIGKILL of a refresh used to leave dbt running as an orphan, still writing into build/ while
the next refresh cleaned that folder. This wrapper asks Linux to SIGKILL it when its parent dies
(prctl PR_SET_PDEATHSIG), records its pid beside the build file so that a
cleanup never deletes files a live dbt writes, then runs dbt's CLI in this process (same pid). It
runs dbt in the warehouse home ($BENCHWH_HOME): the dbt project's paths are relative to it
(dbt_project/profiles.yml), which keeps dbt's parse the same for every home.

In this process dbt keeps the result of the node a --fail-fast build failed on
(`keep_the_fail_fast_result`), skips the events no logger writes (`skip_unlogged_dbt_events`) and
parses an event's message only when it is used (`build_event_messages_lazily`), gives statements
that fetch nothing an empty table without type inference, writes mashumaro's serializers when
first called (`compile_serializers_lazily`), and the
garbage collector leaves the long-lived objects alone (cli/collector.py: dbt's imports and its
loaded project are frozen before the nodes run; the process ends without walking them again).
"""
from __future__ import annotations

import ctypes
import functools
import gc
import os
import signal
import sys
from pathlib import Path

from cli.collector import exit_without_collecting

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the pid file below still keeps cleanup away from a live dbt
    expected = os.environ.get("BENCHWH_PARENT_PID")
    if expected and os.getppid() != int(expected):
        os._exit(137)  # the parent died before prctl took effect


def enter_home() -> None:
    """dagster-dbt starts dbt in the project folder: keep it as the project, run in the home."""
    home = os.environ.get("BENCHWH_HOME")
    if home:
        os.environ.setdefault("DBT_PROJECT_DIR", os.getcwd())
        os.chdir(home)


def skip_unlogged_dbt_events() -> bool:
    """dbt builds every event as a protobuf message and formats it as a JSON line before its
    loggers' levels drop it: a build fires ~3,800 debug events (each SQL statement, connection and
    node step) that the info-level stdout log never shows, 10-15% of a small build's CPU. Skip
    an event below the level of every logger when no callback but dbt's own (which only reads
    warnings) would see it. Returns False, leaving dbt as it is, if dbt's event manager changed."""
    try:
        from dbt.tracking import track_behavior_change_warn
        from dbt_common.events.base_types import EventLevel
        from dbt_common.events.event_manager import EventManager
        from dbt_common.events.logger import _log_level_map
    except ImportError:
        return False
    fire_event = EventManager.fire_event
    if getattr(fire_event, "skips_unlogged", False):
        return True
    warn = _log_level_map.get(EventLevel.WARN)
    if warn is None or not all(hasattr(EventManager(), a) for a in ("loggers", "callbacks")):
        return False

    def fire_logged_event(self, e, level=None, node=None, force_warn_or_error_handling=False):
        rank = _log_level_map.get(level or e.level_tag(), warn)  # an unknown level is always fired
        if (rank < warn and not force_warn_or_error_handling
                and all(rank < _log_level_map.get(lg.level, 0) for lg in self.loggers)
                and all(cb is track_behavior_change_warn for cb in self.callbacks)):
            return None
        return fire_event(self, e, level, node, force_warn_or_error_handling)

    fire_logged_event.skips_unlogged = True
    EventManager.fire_event = fire_logged_event
    return True


def build_event_messages_lazily() -> bool:
    """dbt parses an event's fields into its protobuf message (`ParseDict`) when the event is
    made, before `fire_event` can skip it: a small build makes ~4,500 events and writes ~350; the
    other messages cost ~0.3 of its ~8 CPU-s. The event keeps its arguments, and dbt's own
    constructor runs on first use of the message (any field, `to_dict`, `message()`, ...), so a
    logged event is the same object it was. Returns False, leaving dbt as it is, if dbt's events
    changed."""
    try:
        from dbt_common.events.base_types import BaseEvent
    except ImportError:
        return False
    build_message = BaseEvent.__init__
    if getattr(build_message, "lazy", False):
        return True
    if not all(k in vars(BaseEvent) for k in ("__init__", "__getattr__", "__setattr__")):
        return False

    def keep_arguments(self, *args, **kwargs) -> None:
        object.__setattr__(self, "_message_arguments", (args, kwargs))

    def get(self, key):
        if key == "pb_msg":
            pending = self.__dict__.get("_message_arguments")
            if pending is None:
                raise AttributeError(key)
            build_message(self, *pending[0], **pending[1])  # sets pb_msg, with dbt's handling of bad fields
            self.__dict__.pop("_message_arguments", None)  # after: another thread may be building it too
            return object.__getattribute__(self, "pb_msg")
        return getattr(self.pb_msg, key)

    def set(self, key, value) -> None:
        if key == "pb_msg":
            object.__setattr__(self, key, value)
        else:
            setattr(self.pb_msg, key, value)

    keep_arguments.lazy = True
    BaseEvent.__init__, BaseEvent.__getattr__, BaseEvent.__setattr__ = keep_arguments, get, set
    return True


def empty_tables_without_type_inference() -> bool:
    """dbt gives each statement that fetches nothing `agate.Table(rows=[])`, and agate builds a
    type tester for the columns to infer (its date types set up a calendar parser): ~0.15 CPU-s
    for the ~220 such tables of a small build. With no columns there is nothing to infer: the same
    empty table (no rows, no column names, no column types) without the tester."""
    try:
        import agate
        from dbt_common.clients import agate_helper
    except ImportError:
        return False
    if not hasattr(agate_helper, "empty_table"):
        return False

    def empty_table():
        return agate.Table(rows=[], column_names=[], column_types=[])

    agate_helper.empty_table = empty_table
    return True


def compile_serializers_lazily() -> bool:
    """mashumaro writes a dataclass's (de)serializers when the class is made unless its config
    says `lazy_compilation`; dbt's own classes say so, mashumaro's JSONSchema (which dbt builds
    its validation schemas with) does not: importing dbt wrote its orjson methods, ~0.25 CPU-s,
    and a build never calls them. Set by default before dbt is imported, each method is written
    on its first call, the same code."""
    try:
        from mashumaro.config import BaseConfig
    except ImportError:
        return False
    if not hasattr(BaseConfig, "lazy_compilation"):
        return False
    BaseConfig.lazy_compilation = True
    return True


def restore_failed_result(results: list, failed) -> bool:
    """Put `failed` (the result dbt's FailFastError carries) in place of the 'skipped' mark dbt
    gave its node, or after the results when it has none. False when the result is there already."""
    from dbt.artifacts.schemas.results import RunStatus

    uid = failed.node.unique_id
    for i, result in enumerate(results):
        if getattr(getattr(result, "node", None), "unique_id", None) == uid:
            if result is failed or result.status != RunStatus.Skipped:
                return False
            results[i] = failed
            return True
    results.append(failed)
    return True


def with_fail_fast_result(execute_nodes):
    """`execute_nodes` of dbt's GraphRunnableTask, keeping the node a --fail-fast run failed on."""

    @functools.wraps(execute_nodes)  # also carries the markers of wrappers below it
    def execute_nodes_keeping_the_failure(self):
        results = execute_nodes(self)
        from dbt.exceptions import FailFastError

        failure = getattr(self, "_raise_next_tick", None)
        if isinstance(failure, FailFastError) and getattr(failure.result, "node", None) is not None:
            restore_failed_result(self.node_results, failure.result)
        return results

    execute_nodes_keeping_the_failure.keeps_fail_fast_result = True
    return execute_nodes_keeping_the_failure


def keep_the_fail_fast_result() -> bool:
    """dbt's --fail-fast can lose the result of the node that failed. The worker thread marks the
    run to stop before the thread pool's callback records that node's result; when the main thread
    stops first, dbt marks every node without a result as skipped, the failed one too. The run
    results then name no failure ("no failing node recorded") and the on-run-end hook that logs a
    failed test's rows (macros/log_failing_rows.sql) never sees it (seen once, in a fresh clone's
    `make test`). The failing result, which dbt's FailFastError carries, is put back. Returns
    False, leaving dbt as it is, if dbt's task changed."""
    return wrap_execute_nodes(with_fail_fast_result, "keeps_fail_fast_result")


def with_loaded_project_frozen(execute_nodes):
    """`execute_nodes` of dbt's GraphRunnableTask, first freezing what the process holds then (its
    imports, the manifest, the graph): still one thread, and nothing of it is garbage before the
    process ends, so the full collections while nodes run walk only what the nodes make."""

    @functools.wraps(execute_nodes)
    def execute_nodes_after_freezing(self):
        gc.freeze()
        return execute_nodes(self)

    execute_nodes_after_freezing.freezes_loaded_project = True
    return execute_nodes_after_freezing


def freeze_the_loaded_project() -> bool:
    """Returns False, leaving dbt as it is, if dbt's task changed."""
    return wrap_execute_nodes(with_loaded_project_frozen, "freezes_loaded_project")


def wrap_execute_nodes(wrap, marker: str) -> bool:
    """GraphRunnableTask.execute_nodes = wrap(execute_nodes), once: `marker` is an attribute of
    the wrapper, which functools.wraps copies onto any wrapper above it. False if dbt has no such
    method."""
    try:
        from dbt.task.runnable import GraphRunnableTask
    except ImportError:
        return False
    execute_nodes = getattr(GraphRunnableTask, "execute_nodes", None)
    if execute_nodes is None:
        return False
    if not getattr(execute_nodes, marker, False):
        GraphRunnableTask.execute_nodes = wrap(execute_nodes)
    return True


def main() -> None:
    die_with_parent()
    enter_home()
    build = os.environ.get("BENCHWH_BUILD_PATH")
    if build:
        pid_file = Path(build + ".pid")
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        pid_file.write_text(f"{os.getpid()}\n")
    compile_serializers_lazily()  # first: the other patches import dbt's modules
    skip_unlogged_dbt_events()
    build_event_messages_lazily()
    empty_tables_without_type_inference()
    keep_the_fail_fast_result()
    freeze_the_loaded_project()
    from dbt.cli.main import cli

    gc.freeze()  # dbt's imports, before parsing the command line and loading the project

    sys.argv[0] = "dbt"
    try:
        cli()  # exits: click's standalone mode raises SystemExit with dbt's exit code
    except SystemExit as done:
        exit_without_collecting(done.code)


if __name__ == "__main__":
    main()

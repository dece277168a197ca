"""The Dagster storage of benchwh's instance (orchestration/instance.py writes it into dagster.yaml).

Dagster's sqlite storage, same files and layout (`history/runs.db`, `history/runs/<run id>.db`,
`history/runs/index.db`, `schedules/`), but with one engine per database for the life of the
process and a pool that keeps its connection: Dagster's own classes build an engine and open a
new sqlite connection for every event (~800 in a refresh that builds). A stock Dagster (or
`dagster dev` with its default storage) still reads and writes the same files.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as db
import yaml
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy.pool import QueuePool

# Engines kept for run shards (one db per run); the index shard's is always kept. The CLI touches
# one or two run shards; the UI reads many, and each open shard holds three file descriptors.
RUN_SHARDS_KEPT = 8


def _synchronous_off(dbapi_connection, _record) -> None:
    # run history, not warehouse data: see sqlite_commits_without_fsync in orchestration/instance.py
    dbapi_connection.execute("PRAGMA synchronous=OFF")


def pooled_engine(conn_string: str) -> db.Engine:
    """One kept connection; more only while several threads use the engine at once (closed on
    return, so nothing waits on the pool). check_same_thread=False: the pool hands a connection
    to one thread at a time, and Dagster calls from the step thread and dagster-dbt's stream thread."""
    engine = db.create_engine(conn_string, poolclass=QueuePool, pool_size=1, max_overflow=-1,
                              connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False})
    db.event.listen(engine, "connect", _synchronous_off)
    return engine


class _ForkSafe:
    """Engines made in this process only: a forked child gets none of its parent's connections."""

    def _engines_reset_after_fork(self, engines) -> bool:
        if getattr(self, "_engines_pid", None) != os.getpid():
            for engine in engines:
                engine.dispose(close=False)  # the parent still uses them
            self._engines_pid = os.getpid()
            return True
        return False


class PooledSqliteEventLogStorage(SqliteEventLogStorage, _ForkSafe):
    """Per-run shards and the index shard of Dagster's sqlite event log, one pooled engine each.

    Dagster serialises every use of a shard connection with `_db_lock` (held while the connection
    is in use), so at most one connection per engine is ever checked out, and an engine is
    disposed only under that lock.
    """

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, db.Engine] = OrderedDict()
        self._engines_pid = os.getpid()
        self._tables_seen: set[str] = set()
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(cls, inst_data, config_value):  # the base class builds itself by name
        return cls(inst_data=inst_data, **config_value)

    def has_table(self, table_name: str) -> bool:
        # Dagster asks (a new engine and connection each time) before storing every asset check
        # event; a table that exists stays (migrations add, wipe deletes rows)
        if table_name not in self._tables_seen and super().has_table(table_name):
            self._tables_seen.add(table_name)
        return table_name in self._tables_seen

    def _engine(self, shard: str) -> db.Engine:
        if self._engines_reset_after_fork(self._engines.values()):
            self._engines.clear()
            self._initialized_dbs = set()
        engine = self._engines.get(shard)
        if engine is not None:
            self._engines.move_to_end(shard)
            return engine
        engine = self._engines[shard] = pooled_engine(self.conn_string_for_shard(shard))
        run_shards = [name for name in self._engines if name != INDEX_SHARD_NAME]
        if len(run_shards) > RUN_SHARDS_KEPT:
            self._engines.pop(run_shards[0]).dispose()
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[db.Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn:
                sqlite = conn.connection.dbapi_connection
                changes = sqlite.total_changes
                with conn.begin():
                    yield conn
                if shard != INDEX_SHARD_NAME and sqlite.total_changes != changes:
                    # Dagster's watcher of a run's events (the UI's live run log) wakes when the
                    # run's .db changes; a kept connection commits into the -wal, so copy it over
                    # now, as closing the connection did (no fsync: synchronous=OFF)
                    conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")

    def _dispose_engines(self) -> None:
        with self._db_lock:
            engines, self._engines = list(self._engines.values()), OrderedDict()
            for engine in engines:
                engine.dispose()

    def wipe(self) -> None:
        self._dispose_engines()  # no connection may keep a deleted run db open
        super().wipe()

    def dispose(self) -> None:
        super().dispose()
        self._dispose_engines()


class PooledSqliteRunStorage(SqliteRunStorage, _ForkSafe):
    """Dagster's sqlite run storage (`history/runs.db`) with one pooled engine."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None):
        self._engine_lock = threading.Lock()
        self._engine: db.Engine | None = None
        self._engines_pid = os.getpid()
        super().__init__(conn_string, inst_data)

    @classmethod
    def from_config_value(cls, inst_data, config_value):  # the base class builds itself by name
        return cls.from_local(inst_data=inst_data, **config_value)

    def _pooled(self) -> db.Engine:
        with self._engine_lock:
            if self._engines_reset_after_fork([self._engine] if self._engine else []):
                self._engine = None
            if self._engine is None:
                self._engine = pooled_engine(self._conn_string)
            return self._engine

    @contextmanager
    def connect(self) -> Iterator[db.Connection]:
        with self._pooled().connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()
        with self._engine_lock:
            engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()


class PooledSqliteStorage(DagsterSqliteStorage):
    """`storage: custom:` in benchwh's dagster.yaml: DagsterSqliteStorage's layout under base_dir,
    runs and events through the pooled classes above (schedules are written a few times a day)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self.base_dir = base_dir
        self._run_storage = PooledSqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = PooledSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(cls, inst_data, config_value):  # the base class builds itself by name
        return cls.from_local(inst_data=inst_data, **config_value)

    # what Dagster serialises for the parts (the base class names its stock classes)
    @property
    def event_storage_data(self) -> ConfigurableClassData:
        return ConfigurableClassData(__name__, "PooledSqliteEventLogStorage",
                                     yaml.safe_dump({"base_dir": _event_logs_directory(self.base_dir)}))

    @property
    def run_storage_data(self) -> ConfigurableClassData:
        return ConfigurableClassData(__name__, "PooledSqliteRunStorage",
                                     yaml.safe_dump({"base_dir": _runs_directory(self.base_dir)}))

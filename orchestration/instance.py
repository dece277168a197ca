"""DAGSTER_HOME lives under the warehouse home unless set, with runs of `refresh` queued one at a time."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ingest import config
from orchestration.tags import SERIAL_TAG

DAGSTER_YAML = """\
# Written by benchwh: refresh runs are serialised (one publish at a time).
# Dagster's sqlite run history in this folder, one kept connection per database
# (orchestration/dagster_storage.py; Dagster's own opens one per event).
storage:
  custom:
    module: orchestration.dagster_storage
    class: PooledSqliteStorage
    config:
      base_dir: {base_dir}
run_coordinator:
  module: orchestration.run_coordinator
  class: GuardedRunCoordinator
  config:
    tag_concurrency_limits:
      - key: "{serial_tag}"
        limit: 1
telemetry:
  enabled: false
# no "join the community" sign-up dialog over the UI of a local tool
nux:
  enabled: false
# Step output is our progress lines; no per-step log capture (it spawns `tail` processes).
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
"""


def dagster_yaml(home: Path) -> str:
    """DAGSTER_YAML for this DAGSTER_HOME (the storage names its folder: an instance made with
    DagsterInstance.from_config(home) needs no DAGSTER_HOME in the environment)."""
    return DAGSTER_YAML.format(serial_tag=SERIAL_TAG, base_dir=json.dumps(str(home)))


def dagster_home() -> Path:
    """The Dagster instance the CLI and `benchwh dev` share: env DAGSTER_HOME or $BENCHWH_HOME/dagster."""
    return Path(os.environ.get("DAGSTER_HOME") or config.home() / "dagster").expanduser().resolve()


def sqlite_commits_without_fsync() -> None:
    """Dagster's stock sqlite storage opens, commits and closes a connection per event (~800 a
    refresh that builds), each with fsyncs: 15-40 s of a refresh on a busy disk. Ours
    (orchestration/dagster_storage.py) keeps one connection per database and sets the same pragma;
    this hook covers the engines Dagster still makes (schema setup, schedules) and a hand-written
    dagster.yaml. Its databases under
    DAGSTER_HOME are run history, not warehouse data, so they are written with synchronous=OFF:
    a killed process loses nothing (the OS has the pages); a power cut may damage the run history
    (delete $BENCHWH_HOME/dagster to start it afresh), never the warehouse, which fsyncs its own."""
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if getattr(sqlite_commits_without_fsync, "done", False):
        return

    @event.listens_for(Engine, "connect")
    def _no_fsync(dbapi_connection, _record):
        if not isinstance(dbapi_connection, sqlite3.Connection):
            return
        files = [row[2] for row in dbapi_connection.execute("PRAGMA database_list")]
        root = str(dagster_home())
        if any(f and f.startswith(root + os.sep) for f in files):
            dbapi_connection.execute("PRAGMA synchronous=OFF")

    sqlite_commits_without_fsync.done = True


def ensure_dagster_home() -> Path:
    sqlite_commits_without_fsync()
    home = dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    yaml = home / "dagster.yaml"
    # ours is rewritten when it changes; a dagster.yaml someone wrote by hand is left alone
    text = dagster_yaml(home)
    if not yaml.exists() or (yaml.read_text().startswith("# Written by benchwh") and yaml.read_text() != text):
        yaml.write_text(text)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


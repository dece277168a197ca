"""DAGSTER_HOME lives under the warehouse home unless set, with runs of `refresh` queued one at a time."""
from __future__ import annotations

import os
from pathlib import Path

from ingest import config
from orchestration.tags import SERIAL_TAG

DAGSTER_YAML = """\
# Written by benchwh: refresh runs are serialised (one publish at a time).
run_coordinator:
  module: orchestration.run_coordinator
  class: GuardedRunCoordinator
  config:
    tag_concurrency_limits:
      - key: "{serial_tag}"
        limit: 1
telemetry:
  enabled: false
# Step output is our progress lines; no per-step log capture (it spawns `tail` processes).
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
""".format(serial_tag=SERIAL_TAG)


def dagster_home() -> Path:
    """The Dagster instance the CLI and `benchwh dev` share: env DAGSTER_HOME or $BENCHWH_HOME/dagster."""
    return Path(os.environ.get("DAGSTER_HOME") or config.home() / "dagster").expanduser().resolve()


def _sqlite_commits_without_fsync() -> None:
    """Dagster's sqlite storage (WAL mode) commits each event with an fsync: ~800 events a refresh,
    7 ms each on a busy disk. synchronous=NORMAL, SQLite's advice for WAL, syncs at checkpoints
    only: a killed process loses nothing, a power cut at most the last events of the run log."""
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if getattr(_sqlite_commits_without_fsync, "done", False):
        return

    @event.listens_for(Engine, "connect")
    def _normal_sync(dbapi_connection, _record):
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")

    _sqlite_commits_without_fsync.done = True


def ensure_dagster_home() -> Path:
    _sqlite_commits_without_fsync()
    home = dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    yaml = home / "dagster.yaml"
    # ours is rewritten when it changes; a dagster.yaml someone wrote by hand is left alone
    if not yaml.exists() or (yaml.read_text().startswith("# Written by benchwh") and yaml.read_text() != DAGSTER_YAML):
        yaml.write_text(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


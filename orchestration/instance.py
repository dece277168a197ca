"""DAGSTER_HOME lives under the warehouse home unless set: Dagster's stock SQLite storage, with
runs of `refresh` queued one at a time (a plain dagster.yaml, written once)."""
from __future__ import annotations

import os
from pathlib import Path

from ingest import config
from orchestration.tags import SERIAL_TAG

# The documented dagster.yaml settings (docs.dagster.io, "dagster.yaml reference").
DAGSTER_YAML = """\
# Written by benchwh: refresh runs are serialised (one publish at a time).
storage:
  sqlite:
    base_dir: {base_dir}
run_queue:
  tag_concurrency_limits:
    - key: "{serial_tag}"
      limit: 1
telemetry:
  enabled: false
# no "join the community" sign-up dialog over the UI of a local tool
nux:
  enabled: false
"""


def dagster_yaml(home: Path) -> str:
    return DAGSTER_YAML.format(serial_tag=SERIAL_TAG, base_dir=str(home))


def dagster_home() -> Path:
    """The Dagster instance the CLI and `benchwh dev` share: env DAGSTER_HOME or $BENCHWH_HOME/dagster."""
    return Path(os.environ.get("DAGSTER_HOME") or config.home() / "dagster").expanduser().resolve()


def ensure_dagster_home() -> Path:
    home = dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    yaml = home / "dagster.yaml"
    # ours is rewritten when it changes; a dagster.yaml someone wrote by hand is left alone
    text = dagster_yaml(home)
    if not yaml.exists() or (yaml.read_text().startswith("# Written by benchwh") and yaml.read_text() != text):
        yaml.write_text(text)
    os.environ["DAGSTER_HOME"] = str(home)
    return home

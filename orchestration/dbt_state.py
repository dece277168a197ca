"""What lets one build reuse the dbt parse of the one before (issue 17). No Dagster import: the
benchmark uses it too.

dbt re-parses the whole project (10-15 s) whenever its partial-parse key changes: the cli
`--vars`, the profile's connection values (the DuckDB path), the env vars read by
dbt_project.yml, or when `partial_parse.msgpack` is missing from the target folder. So a build:
  - runs in the warehouse home (cli/dbt_guard.py) and names no home in the parse: the project's
    paths are relative to it (`landing/...`, `raw/...`), and it writes to the same relative path
    every time, `build/building.duckdb`, renamed to `build/<run id>.duckdb` once dbt has exited
    (one dbt at a time per home: a lock);
  - passes the values naming it (version, run id, start time, code revision) in the environment,
    read by dbt only while executing (dbt_project/macros/build_value.sql), not as `--vars`;
  - starts from the parse state the previous successful build left in `dbt-state/`
    (partial_parse.msgpack, copied into its own target folder) and leaves its own there, marked
    with the dbt project folder it was parsed in; a home without one (a new home), or with one
    another checkout kept, starts from the install's (`make manifest`'s `dbt parse`,
    dbt_project/target/), which has the same key.
dbt still checks every project file's hash, so an edited model is re-parsed alone.
"""
from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from ingest import config
from ingest.files import write_atomically

PARSE_STATE = "partial_parse.msgpack"
BUILDING = "building.duckdb"
# the profile's path (dbt_project/profiles.yml), relative to the home dbt runs in
BUILDING_IN_HOME = f"build/{BUILDING}"
# every dbt this project runs (builds, parses, docs, tests) sends dbt Labs nothing
DBT_NO_TRACKING = {"DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
# A build's target folder is deleted after every build, and only its parse state is kept from it.
# dbt's file log repeats every SQL statement at debug level there (about 1.7 MB a build, and 0.5 of
# the 8 CPU-seconds of a build of the offline snapshot); the info lines a refresh keeps
# (logs/dbt-<run id>.log) say what failed. Nor does a build write target/manifest.json (twice):
# cli/dbt_guard.py build_without_manifest_json.
DBT_BUILD_ENV = {**DBT_NO_TRACKING, "DBT_LOG_LEVEL_FILE": "none", "BENCHWH_DBT_MANIFEST_JSON": "0"}


def build_dir() -> Path:
    return config.home() / "build"


def building_path() -> Path:
    """Where dbt writes every build (a stable path keeps dbt's parse valid)."""
    return config.home() / BUILDING_IN_HOME


def parse_state_dir() -> Path:
    """Outside build/, which every refresh cleans: the parse outlives the builds."""
    return config.home() / "dbt-state"


def build_values(run_id: str, code_revision: str) -> dict[str, str]:
    started = datetime.now(timezone.utc)
    return {
        # sorts in time order: publish compares versions as strings
        "build_version": f"{started:%Y%m%dT%H%M%S%fZ}-{run_id[:8]}",
        "build_id": run_id,
        "build_started_at": started.strftime("%Y-%m-%d %H:%M:%S.%f"),
        "code_revision": code_revision,
    }


def build_env(values: dict[str, str]) -> dict[str, str]:
    """The environment variables macros/build_value.sql reads (BENCHWH_BUILD_VERSION, ...)."""
    return {f"BENCHWH_{k.upper()}": v for k, v in values.items()}


def install_parse_state() -> Path:
    """The parse `make manifest` (orchestration/manifest.py) leaves in dbt_project/target/."""
    return config.dbt_project_dir() / "target"


# beside a kept parse state: the dbt project folder it was parsed in
PARSED_IN = "parsed-in"


def mark_parse(state: Path) -> None:
    """Name this checkout's dbt project as where the parse state in `state` was made."""
    write_atomically(state / PARSED_IN, f"{config.dbt_project_dir()}\n")


def parsed_here(state: Path) -> bool:
    try:
        return (state / PARSED_IN).read_text().strip() == str(config.dbt_project_dir())
    except OSError:
        return False


def copy_parse_state(source: Path, folder: Path) -> None:
    """source/partial_parse.msgpack into folder, whole or not at all (OSError when there is none to
    copy, or the disk is full: no partial copy is left behind)."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{PARSE_STATE}.tmp{os.getpid()}"
    try:
        shutil.copyfile(source / PARSE_STATE, tmp)
        os.replace(tmp, folder / PARSE_STATE)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def reuse_parse(target: Path, state: Path | None = None) -> bool:
    """Copy the kept parse state (else the install's) into a build's new target folder; False when
    there is neither. A stale or torn copy costs a full parse, never a wrong build: dbt checks each
    file's checksum, but a seed also remembers its folder, so a state kept by another checkout (one
    moved, or a second one using this home) is passed over for the install's."""
    kept = state or parse_state_dir()
    for folder in ((kept, install_parse_state()) if parsed_here(kept) else (install_parse_state(),)):
        try:
            copy_parse_state(folder, target)
        except OSError:
            continue
        return True
    target.mkdir(parents=True, exist_ok=True)
    return False


def keep_parse(target: Path, state: Path | None = None) -> None:
    """After a successful build: its parse state becomes the one the next build starts from."""
    if not (target / PARSE_STATE).exists():
        return
    folder = state or parse_state_dir()
    copy_parse_state(target, folder)
    mark_parse(folder)


def move_build(building: Path, final: Path) -> None:
    """The finished build under its run's name (and a WAL dbt left, which publish checkpoints)."""
    os.replace(building, final)
    wal = Path(f"{building}.wal")
    if wal.exists():
        os.replace(wal, Path(f"{final}.wal"))


def remove_building(building: Path) -> None:
    for leftover in (building, Path(f"{building}.wal"), Path(f"{building}.pid")):
        leftover.unlink(missing_ok=True)

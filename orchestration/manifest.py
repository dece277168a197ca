"""The dbt manifest Dagster loads the dbt assets from, prepared the dagster-dbt way.

`DBT_PROJECT` is dagster-dbt's `DbtProject`. Under `dagster dev` (what `benchwh dev` runs),
`prepare_if_dev()` re-parses on every load of the definitions, as dagster-dbt intends, into its own
folder (`target/dev/`): dbt writes a manifest in place, and a `benchwh refresh` started beside the
UI read a half-written one from `target/` (a JSONDecodeError seen in the suite). Everywhere
else the manifest must already be prepared: `prepare_manifest()` runs dagster-dbt's preparer
(`dbt parse`, into a private folder whose files are then renamed into place) only when the dbt
project's files changed since the manifest was written (a hash of their contents and folder, kept
beside the manifest), and the commands that load the definitions call it
first (`benchwh refresh`, `runs add`, `dev`; `make install`: `python -m orchestration.manifest`).
Importing a module never parses.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Iterator

from dagster._utils import run_with_concurrent_update_guard

from ingest import config
from orchestration.dbt_cli import BenchPreparer, DbtProject  # before any other dagster_dbt import
from dagster_dbt.dbt_project import using_dagster_dev
from orchestration.dbt_state import DBT_NO_TRACKING, PARSE_STATE, copy_parse_state, install_parse_state

DBT_PROJECT_DIR = config.dbt_project_dir()
INSTALL_TARGET = Path("target")
DEV_TARGET = INSTALL_TARGET / "dev"
DBT_PROJECT = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR,
                         target_path=DEV_TARGET if using_dagster_dev() else INSTALL_TARGET)
MANIFEST_PATH = DBT_PROJECT.manifest_path
# what the manifest was parsed from; a manifest without it (or older than the files) is re-parsed
SOURCES_HASH_PATH = MANIFEST_PATH.with_name("manifest.sources.sha256")
PROJECT_FOLDERS = ("models", "macros", "seeds", "tests", "snapshots", "analyses")
PROJECT_FILES = ("dbt_project.yml", "profiles.yml", "packages.yml", "dependencies.yml")


class ManifestNotPrepared(RuntimeError):
    """The definitions were loaded outside `dagster dev` before any command prepared the manifest."""


class InstallPreparer(BenchPreparer):
    """dagster-dbt's `dbt parse`, keeping the seeds in the parse state. dagster-dbt blanks their
    checksums, for a state made in one place and used in another (a seed remembers its folder), and
    every build starting from the install's state then parsed the seeds again: 0.7 of the 8
    CPU-seconds of an offline build. This state is used only where it was made (parse_key names
    the project folder, so a moved checkout is parsed again)."""

    def _invalidate_seeds_in_partial_parse(self, project: DbtProject) -> None:
        return None


def project_files_hash() -> str:
    """sha256 over the dbt project's files (path and content) and the dbt version that parses them."""
    digest = hashlib.sha256(f"dbt-core {version('dbt-core')}\n".encode())
    paths = [DBT_PROJECT_DIR / name for name in PROJECT_FILES]
    for folder in PROJECT_FOLDERS:
        paths += (DBT_PROJECT_DIR / folder).rglob("*")
    for path in sorted(p for p in paths if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(DBT_PROJECT_DIR)}\n".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def parse_key(files_hash: str) -> str:
    """What the stored parse was made from: the project's files, and where they are."""
    return hashlib.sha256(f"{files_hash}\n{DBT_PROJECT_DIR}\n".encode()).hexdigest()


def is_prepared(digest: str | None = None) -> bool:
    try:
        stored = SOURCES_HASH_PATH.read_text().strip()
    except OSError:
        return False
    return MANIFEST_PATH.exists() and stored == parse_key(digest or project_files_hash())


@contextlib.contextmanager
def dbt_environment() -> Iterator[None]:
    """dagster-dbt runs `dbt` from PATH: put the one beside this interpreter first (so a CLI run by
    path, without an activated venv, works), and give the project the BENCHWH_HOME it reads."""
    saved = {k: os.environ.get(k) for k in ("PATH", "BENCHWH_HOME", *DBT_NO_TRACKING)}
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), saved["PATH"] or os.defpath])
    os.environ["BENCHWH_HOME"] = str(config.home())
    os.environ.update(DBT_NO_TRACKING)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def prepare_manifest(log=None) -> Path:
    """Parse the dbt project when its files changed since the manifest was written; else nothing."""
    digest = project_files_hash()
    if is_prepared(digest):
        return MANIFEST_PATH
    if log:
        log("dbt: parsing the project (its files changed since the last parse)")
    MANIFEST_PATH.parent.mkdir(parents=True, exist_ok=True)
    with dbt_environment():
        # one process parses; one waiting meanwhile finds the manifest newer and skips
        run_with_concurrent_update_guard(MANIFEST_PATH, _parse_then_rename, guard_timeout_seconds=600)
    if not MANIFEST_PATH.exists():
        raise ManifestNotPrepared(f"dbt parse wrote no manifest at {MANIFEST_PATH}")
    tmp = SOURCES_HASH_PATH.with_name(f".{SOURCES_HASH_PATH.name}.tmp{os.getpid()}")
    tmp.write_text(parse_key(digest) + "\n")
    tmp.replace(SOURCES_HASH_PATH)
    return MANIFEST_PATH


# renamed into place in this order: the manifest, which readers load, last
PARSE_ARTIFACTS = (PARSE_STATE, "semantic_manifest.json", "perf_info.json", "manifest.json")


def _parse_then_rename() -> None:
    """`dbt parse` into a private folder beside the manifest, then each file renamed into place: a
    process loading the definitions meanwhile reads the old manifest or the new one, never part of
    one (dbt writes its files in place)."""
    target = MANIFEST_PATH.parent
    for left in target.glob(".parse-*"):  # a killed parse's: this one holds the lock
        shutil.rmtree(left, ignore_errors=True)
    private = target / f".parse-{os.getpid()}"
    private.mkdir(parents=True)
    try:
        with contextlib.suppress(OSError):  # a partial parse from the last state, when there is one
            copy_parse_state(target, private)
        project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR,
                             target_path=private.relative_to(DBT_PROJECT_DIR))
        InstallPreparer().prepare(project)
        for name in PARSE_ARTIFACTS:
            if (private / name).exists():
                os.replace(private / name, target / name)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def prepare_if_dev() -> Path:
    """Under `dagster dev`, dagster-dbt's own preparation; elsewhere the manifest must be prepared."""
    if using_dagster_dev():
        _start_from_the_install_parse()
    with dbt_environment():
        BenchPreparer().prepare_if_dev(DBT_PROJECT)
    if not MANIFEST_PATH.exists():
        raise ManifestNotPrepared(f"no dbt manifest at {MANIFEST_PATH}: run `make install` or "
                                  "`python -m orchestration.manifest` (benchwh refresh and dev prepare it)")
    return MANIFEST_PATH


def _start_from_the_install_parse() -> None:
    """dev's first parse starts from the install's parse state (a partial parse, not a full one)."""
    dev = DBT_PROJECT_DIR / DEV_TARGET
    if not (dev / PARSE_STATE).exists():
        with contextlib.suppress(OSError):  # no install parse either: dev's first parse is a full one
            copy_parse_state(install_parse_state(), dev)


if __name__ == "__main__":
    print(prepare_manifest(log=print))

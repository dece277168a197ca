"""The dbt project as dagster-dbt sees it: `DbtProject`, its manifest prepared the documented way.

Under `dagster dev` (`benchwh dev`) `prepare_if_dev()` re-parses on every load of the definitions,
into its own target folder (`target/dev/`), so a `benchwh refresh` beside the UI never reads a
manifest being rewritten. Elsewhere the manifest is prepared before the definitions load:
`make install` runs `dagster-dbt project prepare-and-package`, and the commands that load the
definitions (`benchwh refresh`, `runs add`, `dev`) call `prepare_manifest()`, which runs the same
preparer only when the dbt project's files changed since (a hash kept beside the manifest).
Importing this module never parses.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Iterator

from dagster_dbt import DbtProject
from dagster_dbt.dbt_project import using_dagster_dev

from ingest import config

DBT_PROJECT_DIR = config.dbt_project_dir()
# every dbt this project runs sends dbt Labs nothing
DBT_NO_TRACKING = {"DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
DBT_PROJECT = DbtProject(project_dir=DBT_PROJECT_DIR,
                         target_path=Path("target") / "dev" if using_dagster_dev() else Path("target"))
MANIFEST_PATH = DBT_PROJECT.manifest_path
# what the manifest was parsed from; a manifest without it (or older than the files) is re-parsed
SOURCES_HASH_PATH = MANIFEST_PATH.with_name("manifest.sources.sha256")
PROJECT_FOLDERS = ("models", "macros", "seeds", "tests", "snapshots", "analyses")
PROJECT_FILES = ("dbt_project.yml", "profiles.yml", "packages.yml", "dependencies.yml")


class ManifestNotPrepared(RuntimeError):
    """The definitions were loaded outside `dagster dev` before any command prepared the manifest."""


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


def is_prepared(digest: str | None = None) -> bool:
    try:
        stored = SOURCES_HASH_PATH.read_text().strip()
    except OSError:
        return False
    return MANIFEST_PATH.exists() and stored == (digest or project_files_hash())


@contextlib.contextmanager
def dbt_environment() -> Iterator[None]:
    """dagster-dbt's preparer runs `dbt` from PATH: put the one beside this interpreter first (a CLI
    run by path, without an activated venv, works), and give the project the BENCHWH_HOME it reads."""
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
    """Parse the dbt project when its files changed since the manifest was written; else nothing.
    One process parses at a time (a lock file beside the manifest); one that waited finds it done."""
    digest = project_files_hash()
    if is_prepared(digest):
        return MANIFEST_PATH
    MANIFEST_PATH.parent.mkdir(parents=True, exist_ok=True)
    with open(MANIFEST_PATH.with_name(".prepare.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_prepared(digest):
            return MANIFEST_PATH
        if log:
            log("dbt: parsing the project (its files changed since the last parse)")
        with dbt_environment():
            DBT_PROJECT.preparer.prepare(DBT_PROJECT)
        if not MANIFEST_PATH.exists():
            raise ManifestNotPrepared(f"dbt parse wrote no manifest at {MANIFEST_PATH}")
        tmp = SOURCES_HASH_PATH.with_name(f".{SOURCES_HASH_PATH.name}.tmp{os.getpid()}")
        tmp.write_text(digest + "\n")
        tmp.replace(SOURCES_HASH_PATH)
    return MANIFEST_PATH


def prepare_if_dev() -> Path:
    """Under `dagster dev`, dagster-dbt's own preparation; elsewhere the manifest must be prepared."""
    with dbt_environment():
        DBT_PROJECT.prepare_if_dev()
    if not MANIFEST_PATH.exists():
        raise ManifestNotPrepared(f"no dbt manifest at {MANIFEST_PATH}: run `make install` "
                                  "(benchwh refresh and dev prepare it)")
    return MANIFEST_PATH


if __name__ == "__main__":
    print(prepare_manifest(log=print))

"""What a build reads, as one fingerprint: a refresh whose inputs equal those of the published
version skips the build (issue 17, "no-op refresh"; README "A refresh with nothing new").

A build is a pure function of
  - the landing files: written only by the Lander (new files, renames and removals, never an
    edit in place), so their names and their folders' modification times say when they changed;
  - the raw fetch log `raw/<source>/manifest.jsonl` (dbt reads it: a 304 moves a price's
    validity): its content (each fetch touches the file, so not its time);
  - the dbt project's files and dbt's version (orchestration/manifest.py's hash) and the code
    revision (audit.build_info names it).
The fingerprint of the inputs a published version was built from is kept with its checksum in
history/index.json. No Dagster import.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ingest import config
from ingest.raw_store import file_sha256


def inputs_fingerprint(code_revision: str, project_hash: str) -> str:
    digest = hashlib.sha256(f"code {code_revision}\ndbt {project_hash}\n".encode())
    landing = config.landing_dir()
    for folder, dirs, files in os.walk(landing):
        dirs.sort()
        rel = os.path.relpath(folder, landing)
        digest.update(f"d {rel} {os.stat(folder).st_mtime_ns}\n".encode())
        for name in sorted(files):
            digest.update(f"f {name}\n".encode())
    raw = config.raw_dir()
    for manifest in sorted(raw.glob("*/manifest.jsonl")):
        digest.update(f"m {manifest.relative_to(raw)} {file_sha256(manifest)}\n".encode())
    return digest.hexdigest()


def sidecar(build_file: Path) -> Path:
    """Beside a build file: the fingerprint of the inputs it was built from (publish records it)."""
    return Path(f"{build_file}.inputs")


def published_inputs() -> tuple[str, str] | None:
    """(version, inputs fingerprint) of the published file when it is intact and has one."""
    from publish.publish import read_version
    from publish.verify import check_published, load_index

    current = read_version(config.published_path())
    if current is None:
        return None
    entry = load_index().get(current["version"]) or {}
    if not entry.get("inputs") or not check_published()["ok"]:
        return None
    return current["version"], entry["inputs"]

"""Damage that must stop a publish (issue #12): landing files that no longer match the sha256
their ledger recorded, and a raw store whose manifest and blobs disagree.

`check_home(home)` returns one line per problem, each naming the file; the dbt asset runs it
before dbt reads anything and fails the run on the first problem.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ingest.file_memo import file_stamp, kept
from ingest.landing import Lander
from ingest.raw_store import RawStore, file_sha256


def landing_problems(landing: Path, store: RawStore, source: str) -> list[str]:
    """Every landing file a ledger entry lists must exist with its recorded sha256."""
    problems = []
    for outcome in Lander(landing, store, log=lambda _m: None).outcomes(source):
        for rel, digest in outcome.files.items():
            path = landing / rel
            if not path.exists():
                problems.append(f"landing/{rel}: missing (the ledger of payload {outcome.sha256[:12]} lists it)")
            elif file_sha256(path) != digest:
                problems.append(f"landing/{rel}: sha256 differs from the ledger (damaged; delete it and "
                                f"landing/{source}/_ledger/ entries of its payloads to land them again from raw)")
    return problems


def raw_problems(store: RawStore, source: str) -> list[str]:
    """Manifest lines and blobs must match: a line without its blob, a blob without a line, a torn line.

    One stat per line and plain string paths: LocalScore's manifest has ~100,000 lines at scale 1.
    A manifest this process parsed whole and has not changed since (`RawStore.entries`, kept in
    ingest/file_memo.py while landing) is not parsed again: every line of it is a row. Damage found
    that way is named by reading the manifest line by line (with line numbers)."""
    manifest = store.manifest_path(source)
    stamp = file_stamp(manifest)
    parsed = kept(manifest, stamp) if stamp is not None else None
    if parsed is not None:
        root = str(store.root)
        problems = [p for e in parsed if (p := _blob_problem(root, e.path, e.bytes, e.status, "an entry"))]
        if not problems and not _unlisted_blobs(store, source, {e.path for e in parsed}):
            return []
    return _raw_problems_by_line(store, source)


def _blob_problem(root: str, path: str, size: int, status: int, where: str) -> str | None:
    if status != 200:
        return None
    try:
        actual = os.stat(f"{root}/{path}").st_size
    except FileNotFoundError:
        return f"raw/{path}: missing ({where} lists it)"
    return f"raw/{path}: {actual} bytes, the manifest says {size}" if actual != size else None


def _unlisted_blobs(store: RawStore, source: str, listed: set[str]) -> list[str]:
    problems = []
    root = str(store.root)
    prefix = len(root) + 1
    for dirpath, _dirs, files in os.walk(os.path.join(root, source)):
        for name in files:
            if name == "manifest.jsonl" or name.startswith(".") or ".tmp" in name:
                continue
            rel = os.path.join(dirpath, name)[prefix:]
            if rel not in listed:
                problems.append(f"raw/{rel}: no line in raw/{source}/manifest.jsonl (manifest truncated?)")
    return problems


def _raw_problems_by_line(store: RawStore, source: str) -> list[str]:
    problems = []
    manifest = store.manifest_path(source)
    root = str(store.root)
    listed: set[str] = set()
    if manifest.exists():
        with manifest.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                    path, size, status = doc["path"], int(doc["bytes"]), int(doc["status"])
                except (ValueError, KeyError, TypeError):
                    problems.append(f"raw/{source}/manifest.jsonl: line {n} is not a manifest row (torn or edited)")
                    continue
                listed.add(path)
                problem = _blob_problem(root, path, size, status, f"line {n} of raw/{source}/manifest.jsonl")
                if problem:
                    problems.append(problem)
    return problems + _unlisted_blobs(store, source, listed)


def check_home(home: Path, sources: list[str]) -> list[str]:
    store = RawStore(Path(home) / "raw")
    problems = []
    for source in sources:
        problems += raw_problems(store, source)
        problems += landing_problems(Path(home) / "landing", store, source)
    return problems

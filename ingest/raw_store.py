"""Content-addressed raw store: warehouse/raw/<source>/<yyyy>/<mm>/<dd>/<sha256>.<ext>.

Every fetch appends one row to raw/<source>/manifest.jsonl, also a 304 (it proves the resource
was unchanged at that time, which price validity ranges need). Blobs are immutable and stored once.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Mapping

from ingest.file_memo import file_stamp, keep, kept
from ingest.files import file_line_chunks, json_lines_at_once, write_atomically


@dataclass(frozen=True, slots=True)
class RawEntry:
    source: str
    url: str
    fetched_at: str  # ISO 8601 UTC, "2026-11-30T07:00:00Z"
    status: int
    sha256: str
    bytes: int
    ext: str
    path: str  # relative to the raw root
    etag: str | None = None
    last_modified: str | None = None
    parser_version: str | None = None
    final_url: str | None = None  # where the body came from after redirects (None: same as url)


# The ledger's entries and its file names hold the same hashes, URLs and times: interned
# (sys.intern), each is one string object. Source, ext and parser_version repeat on every line:
# one object per value. With the slots, an entry then holds ~400 bytes rather than ~1,100.
_INTERNED_FIELDS = ("url", "fetched_at", "sha256")
_REPEATED_FIELDS = ("source", "ext", "parser_version")
_REPEATED: dict[str, str] = {}


def _entry(doc) -> RawEntry:
    """The entry of a manifest line (through __init__: its defaults, its errors)."""
    if isinstance(doc, dict):
        for name in _INTERNED_FIELDS:
            value = doc.get(name)
            if type(value) is str:
                doc[name] = sys.intern(value)
        for name in _REPEATED_FIELDS:
            value = doc.get(name)
            if type(value) is str and len(_REPEATED) < 1_000:
                doc[name] = _REPEATED.setdefault(value, value)
    return RawEntry(**doc)


class ManifestError(ValueError):
    """A raw manifest line that cannot be read; the message names the file and the line."""


def _manifest_row(path: Path, n: int, line: str):
    try:
        return json.loads(line)
    except ValueError as exc:
        what = "not JSON" if line.endswith("}") else "cut short"
        raise ManifestError(f"raw manifest {path} line {n} is {what} ({exc.msg} at column {exc.colno}; "
                            "torn by a crash or a full disk?): repair or remove that line") from None


def sha256_hex(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in 1 MiB chunks (landing files, published and history copies)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def utc_iso(ts: datetime | None = None) -> str:
    ts = ts or datetime.now(timezone.utc)
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)


class RawStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self._blob_index: dict[str, dict[str, str]] = {}  # source -> sha256 -> path, loaded once
        self._pending_lines: dict[str, list[str]] | None = None  # set inside batched()

    @contextlib.contextmanager
    def batched(self):
        """Bulk imports: manifest rows are written (and fsynced) once per source at the end.

        Inside the block entries()/payloads() do not see the rows put so far. A block inside
        another joins it: the outer block writes everything at its end.
        """
        if self._pending_lines is not None:
            yield self
            return
        self._pending_lines = {}
        try:
            yield self
        finally:
            pending, self._pending_lines = self._pending_lines, None
            for source, lines in pending.items():
                self._write_lines(source, lines)

    def manifest_path(self, source: str) -> Path:
        return self.root / source / "manifest.jsonl"

    def ensure_source(self, source: str) -> None:
        path = self.manifest_path(source)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)

    def put(
        self,
        source: str,
        body: bytes,
        *,
        url: str,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        ext: str = "json",
        fetched_at: str | None = None,
        parser_version: str | None = None,
        final_url: str | None = None,
    ) -> tuple[RawEntry, bool]:
        """Store a body (once per hash) and log the fetch. Returns (entry, is_new_blob)."""
        headers = {k.lower(): v for k, v in (headers or {}).items()}
        fetched_at = fetched_at or utc_iso()
        digest = sha256_hex(body)
        existing = self._find_blob(source, digest)
        if existing is not None:
            rel, is_new = existing, False
        else:
            day = parse_iso(fetched_at)
            rel = f"{source}/{day:%Y/%m/%d}/{digest}.{ext}"
            write_atomically(self.root / rel, body)
            is_new = True
        entry = RawEntry(
            source=source, url=url, fetched_at=fetched_at, status=status, sha256=digest,
            bytes=len(body), ext=ext, path=rel, etag=headers.get("etag"),
            last_modified=headers.get("last-modified"), parser_version=parser_version,
            final_url=final_url if final_url and final_url != url else None,
        )
        self._append(entry)
        self._blob_index.setdefault(source, {})[digest] = rel
        return entry, is_new

    def record_not_modified(self, previous: RawEntry, *, fetched_at: str | None = None) -> RawEntry:
        """Log a 304: the resource still has the body `previous` points at."""
        entry = RawEntry(**{**asdict(previous), "fetched_at": fetched_at or utc_iso(), "status": 304})
        self._append(entry)
        return entry

    def entries(self, source: str) -> list[RawEntry]:
        path = self.manifest_path(source)
        stamp = file_stamp(path)
        if stamp is None:
            return []
        parsed = kept(path, stamp)  # entries are frozen: sharing them between readers is safe
        if parsed is None:
            parsed, read = [], 0
            for lines in file_line_chunks(path):
                docs = json_lines_at_once(lines)
                if docs is None:  # a blank or bad line: blank ones skipped, a bad one named
                    docs = [_manifest_row(path, read + n, line.strip())
                            for n, line in enumerate(lines, 1) if line.strip()]
                parsed.extend(map(_entry, docs))
                read += len(lines)
            keep(path, stamp, parsed)
        return list(parsed)

    def payloads(self, source: str) -> Iterator[RawEntry]:
        """Each distinct stored body once, in order of first fetch."""
        seen: set[str] = set()
        for entry in sorted(self.entries(source), key=lambda e: e.fetched_at):
            if entry.status == 200 and entry.sha256 not in seen:
                seen.add(entry.sha256)
                yield entry

    def latest_for_url(self, source: str, url: str) -> RawEntry | None:
        latest = None
        for entry in self.entries(source):
            if entry.url == url and entry.status in (200, 304):
                if latest is None or entry.fetched_at >= latest.fetched_at:
                    latest = entry
        return latest

    def read(self, entry: RawEntry) -> bytes:
        body = (self.root / entry.path).read_bytes()
        if sha256_hex(body) != entry.sha256:
            raise ValueError(f"raw blob {entry.path} does not match its sha256")
        return body

    def remove_entries(self, source: str, drop) -> int:
        """Rewrite the manifest without the entries `drop(entry)` selects; delete blobs left unused.

        Only for demo data (ingest/demo.py) and pruning rejected junk within its budget
        (ingest/sources/runs/add.py): the raw store is otherwise append-only.
        """
        entries = self.entries(source)
        kept = [e for e in entries if not drop(e)]
        removed = len(entries) - len(kept)
        if not removed:
            return 0
        write_atomically(self.manifest_path(source),
                         "".join(json.dumps(asdict(e), sort_keys=True) + "\n" for e in kept))
        # blobs that lines of an open batch (not yet in the manifest file) point to stay too
        pending = {json.loads(line)["path"] for line in (self._pending_lines or {}).get(source, [])}
        still_used = {e.path for e in kept} | pending
        for gone in {e.path for e in entries} - still_used:
            (self.root / gone).unlink(missing_ok=True)
        self._blob_index.pop(source, None)
        return removed

    def _find_blob(self, source: str, digest: str) -> str | None:
        if source not in self._blob_index:
            self._blob_index[source] = {e.sha256: e.path for e in self.entries(source)}
        rel = self._blob_index[source].get(digest)
        return rel if rel is not None and (self.root / rel).exists() else None

    def _append(self, entry: RawEntry) -> None:
        line = json.dumps(asdict(entry), sort_keys=True) + "\n"
        if self._pending_lines is not None:
            self._pending_lines.setdefault(entry.source, []).append(line)
            return
        self._write_lines(entry.source, [line])

    def _write_lines(self, source: str, lines: list[str]) -> None:
        path = self.manifest_path(source)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write("".join(lines))
            fh.flush()
            os.fsync(fh.fileno())
            fcntl.flock(fh, fcntl.LOCK_UN)

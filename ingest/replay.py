"""Offline mode: copy a source's bundled recorded snapshots into the raw store.

A recording lives in ingest/snapshots/<source>/ (or where the source's `recording_dir()` points,
for sources from other packages): `index.json` lists the recorded responses
`[{"url": ..., "fetched_at": "...Z", "status": 200, "headers": {...}, "file": "..."}]` in the order
they were fetched, each body in `file` beside it. Replaying keeps the recorded `fetched_at`, so an
offline build is the same on any day, and replaying twice stores nothing new.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING
from pathlib import Path

from ingest.config import snapshots_dir
from ingest.raw_store import RawEntry, RawStore, sha256_hex

if TYPE_CHECKING:
    from ingest.source import Source


def recording_dir(source: str | Source) -> Path:
    """The source's own recording_dir() (a name is looked up among the registered sources), else
    ingest/snapshots/<source>."""
    from ingest.source import load_sources

    registered = load_sources().get(source) if isinstance(source, str) else source
    hook = getattr(registered, "recording_dir", None)
    return Path(hook()) if callable(hook) else snapshots_dir() / source


def has_recording(source: str | Source) -> bool:
    return (recording_dir(source) / "index.json").is_file()


def replay_into_store(source: str | Source, store: RawStore, parser_version: str | None = None) -> list[RawEntry]:
    """Store every recorded response not yet in the manifest. Returns the new manifest rows."""
    folder = recording_dir(source)
    source = source if isinstance(source, str) else source.name
    index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    seen = {(e.url, e.fetched_at, e.sha256) for e in store.entries(source)}
    added = []
    for rec in sorted(index, key=lambda r: r["fetched_at"]):
        body = (folder / rec["file"]).read_bytes()
        if (rec["url"], rec["fetched_at"], sha256_hex(body)) in seen:
            continue
        ext = Path(rec["file"]).suffix.lstrip(".") or "bin"
        entry, _ = store.put(source, body, url=rec["url"], status=int(rec.get("status", 200)),
                             headers=rec.get("headers") or {}, ext=ext,
                             fetched_at=rec["fetched_at"], parser_version=parser_version)
        added.append(entry)
    return added


def newest_recording_time(sources: list[str]) -> str | None:
    """The replay clock: freshness in offline mode is judged as of the newest recording."""
    from ingest.source import load_sources

    registered = load_sources()  # once: each lookup by name would scan the installed packages
    times = []
    for source in sources:
        index_file = recording_dir(registered.get(source, source)) / "index.json"
        if index_file.is_file():
            index = json.loads(index_file.read_text(encoding="utf-8"))
            times += [r["fetched_at"] for r in index]
    return max(times) if times else None

"""Demo data: what `refresh --offline` replays from the bundled recordings.

A raw entry is demo data when it is one of the recorded responses (same url, fetch time and
body hash as an entry of the source's recording index). Nothing else needs marking: the raw
store is the truth, and a rebuild from raw gives the same verdict.

Policy (docs/architecture.md): demo data is dropped when live data arrives. A live refresh in a
home that holds demo data first removes the recorded raw entries and re-lands what is left,
so demo rows are never published beside live ones. `status` and the published manifest say
when a version holds demo data.
"""
from __future__ import annotations

import json
import shutil
from functools import lru_cache
from pathlib import Path

from ingest.raw_store import RawEntry, RawStore


@lru_cache(maxsize=None)
def _recorded(source: str) -> frozenset:
    from ingest.replay import has_recording, recording_dir
    from ingest.raw_store import sha256_hex

    if not has_recording(source):
        return frozenset()
    folder = recording_dir(source)
    index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    return frozenset((r["url"], r["fetched_at"], sha256_hex((folder / r["file"]).read_bytes())) for r in index)


def is_recorded(entry: RawEntry) -> bool:
    return (entry.url, entry.fetched_at, entry.sha256) in _recorded(entry.source)


def recording_clock(source: str) -> str | None:
    from ingest.replay import newest_recording_time
    return newest_recording_time([source])


def demo_sources(store: RawStore, sources) -> list[str]:
    """The sources whose raw store holds recorded (demo) responses."""
    return [name for name in sorted(sources) if any(is_recorded(e) for e in store.entries(name))]


def drop_demo(store: RawStore, landing_root: Path, sources, log=print) -> list[str]:
    """Remove the recorded entries from the raw store and the landing of the sources that held them.

    Landing is a pure function of raw (DESIGN §1), so the affected sources are re-landed from
    what raw still holds by the next `land_pending`. Returns the sources changed.
    """
    changed = demo_sources(store, sources)
    for name in changed:
        removed = store.remove_entries(name, is_recorded)
        shutil.rmtree(Path(landing_root) / name, ignore_errors=True)
        shutil.rmtree(Path(landing_root) / "_quarantine" / name, ignore_errors=True)
        log(f"{name}: dropped {removed} demo payloads of the offline recording (live data replaces them)")
    return changed

"""The run tags benchwh writes and reads, named once: what a run fetches, and the queue key that
keeps refreshes one at a time (the limit is set in orchestration/instance.py's dagster.yaml)."""
from __future__ import annotations

SOURCES_TAG = "benchwh/sources"  # "all", "none" or a comma list of source names to fetch
OFFLINE_TAG = "benchwh/offline"  # "1": replay the bundled recordings instead of the network
SERIAL_TAG = "benchwh/serial"  # refresh runs share one value, limited to one at a time
SERIAL_REFRESH = "refresh"
STRICT_TAG = "benchwh/strict"  # "1": a source that fails stops the run (else the others publish)
ENGINE_TAG = "benchwh/engine"  # "duckdb" or "spark": the dbt engine of the build (orchestration/execution.py)


def fetch_tags(sources: list[str] | None, offline: bool, engine: str | None = None,
               strict: bool = False) -> dict[str, str]:
    """Tags of a refresh that fetches every source (None), none ([]) or the named ones."""
    wanted = "all" if sources is None else (",".join(sources) if sources else "none")
    tags = {SOURCES_TAG: wanted, OFFLINE_TAG: "1" if offline else "0"}
    if strict:
        tags[STRICT_TAG] = "1"
    if engine:
        tags[ENGINE_TAG] = engine
    return tags

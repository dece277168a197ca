"""Synthetic OpenRouter snapshots (duplicates, no-price and quarantined rows by day) and a raw store
plus Lander holding them, for the landing and its fault tests; a source's offline recording landed
into a home, for the tests that build dbt on it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from ingest.landing import Lander
from ingest.raw_store import RawStore
from ingest.replay import replay_into_store
from ingest.source import Source

URL = "https://openrouter.ai/api/v1/models"


def snapshot(day: int, n_models: int = 12) -> bytes:
    data = []
    for i in range(n_models):
        price = f"0.00000{(i + day) % 9 + 1}"
        data.append({"id": f"vendor/model-{i}", "name": f"Model {i} (day {day})", "context_length": 8192,
                     "pricing": {"prompt": price, "completion": price}})
    if day % 3 == 0:
        data.append({"id": "vendor/model-1", "pricing": {"prompt": "0.000001", "completion": "0"}})  # listed twice
    if day % 4 == 0:
        data.append({"id": "openrouter/auto", "pricing": {"prompt": "-1", "completion": "-1"}})  # no fixed price: lands
        data.append({"id": "vendor/negative", "pricing": {"prompt": "-0.000002", "completion": "0"}})  # quarantined
    if day % 5 == 0:
        data.append({"id": "vendor/odd", "context_length": "lots", "pricing": {"prompt": "0", "completion": "0"}})
    return json.dumps({"data": data}).encode()


def store_with(root: Path, bodies: list[bytes]) -> tuple[RawStore, Lander]:
    store = RawStore(root / "raw")
    for day, body in enumerate(bodies, 1):
        store.put("openrouter", body, url=URL, fetched_at=f"2026-10-{day:02d}T06:00:00Z")
    return store, Lander(root / "landing", store, log=lambda m: None)


def lay_out(home: Path, sources: Iterable[Source]) -> None:
    """Each entity's typed empty landing file, so that every dbt source() a build reads resolves."""
    lander = Lander(home / "landing", RawStore(home / "raw"), log=lambda m: None)
    for source in sources:
        lander.ensure_layout(source)


def land_recording(home: Path, source: Source) -> list:
    """The source's offline recording replayed into home/raw and landed into home/landing (what
    Lander.land_pending returns; it raises SourceFailed as a refresh's landing would)."""
    store = RawStore(home / "raw")
    replay_into_store(source, store, source.parser_version)
    return Lander(home / "landing", store, log=lambda m: None).land_pending(source)

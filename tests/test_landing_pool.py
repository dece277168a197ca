"""A backlog landed by a process pool (ingest/landing/lander.py) writes what landing in-process
writes: the same ledger (byte for byte), landing files, rows and quarantine. Real raw inputs
(benchmarks/generate.py), real worker processes."""
from __future__ import annotations

import json
from dataclasses import asdict
import shutil
import threading
from pathlib import Path

import duckdb
import pytest

from benchmarks.generate import Plan, generate
from ingest.landing import Lander
from ingest.landing import lander as lander_module
from ingest.raw_store import RawStore
from ingest.source import SourceFailed, load_sources

SOURCES = ("localscore", "runs", "openrouter")
API_URL = "https://www.localscore.ai/api/results?sortDirection=desc&limit=100&page=1"


def _api_page(store: RawStore) -> list[dict]:
    entry = next(e for e in store.payloads("localscore") if "/api/results" in e.url)
    return json.loads(store.read(entry))


def _raw(root: Path) -> RawStore:
    generate(Plan.for_scale(0.01, 2026, 5), root, root.parent / "incoming")
    store = RawStore(root / "raw")
    runs = _api_page(store)
    # later API pages with an impossible value in some runs: quarantined rows, the pages land
    for day, k in ((2, 3), (3, 7), (4, 11)):
        page = [dict(r) for r in runs]
        for r in page[::k]:
            r["avg_gen_tps"] = -1.0
        store.put("localscore", json.dumps(page).encode(), url=API_URL, fetched_at=f"2026-11-0{day}T01:00:00Z")
    # a page read by the BeautifulSoup fallback (attributes reordered), and one that is rejected
    entry = next(e for e in store.payloads("localscore") if "/result/" in e.url)
    body = store.read(entry).replace(b'<script id="__NEXT_DATA__" type="application/json">',
                                     b'<script type="application/json" id="__NEXT_DATA__">')
    store.put("localscore", body, url=entry.url, fetched_at="2026-11-02T02:00:00Z")
    store.put("localscore", b"<html><body><div>Result not found</div></body></html>",
              url="https://www.localscore.ai/result/999999999", fetched_at="2026-11-03T02:00:00Z")
    return store


def _files(landing: Path) -> dict[str, bytes]:
    return {str(p.relative_to(landing)): p.read_bytes() for p in sorted(landing.rglob("*")) if p.is_file()}


def _rows(glob: Path) -> list[tuple]:
    con = duckdb.connect()
    try:
        return con.execute(f"select * from read_parquet('{glob}', union_by_name=true) order by all").fetchall()
    finally:
        con.close()


def _land(home: Path, workers: int) -> dict[str, list]:
    lander = Lander(home / "landing", RawStore(home / "raw"), log=lambda m: None)
    sources = load_sources(include_external=False)
    return {name: lander.land_pending(sources[name], workers=workers, pool_min=0) for name in SOURCES}


def test_pool_landing_equals_in_process_landing(tmp_path, monkeypatch):
    # small segments and batches, so a few thousand rows make many of each (rows cut inside segments)
    monkeypatch.setattr(lander_module, "BATCH_PAYLOADS", 150)
    monkeypatch.setattr(lander_module, "BATCH_ROWS", 600)
    _raw(tmp_path / "serial")
    shutil.copytree(tmp_path / "serial" / "raw", tmp_path / "pool" / "raw")
    store = RawStore(tmp_path / "serial" / "raw")
    assert len(lander_module.plan_segments(list(store.payloads("localscore")))) > 4

    serial = _land(tmp_path / "serial", workers=1)
    pooled = _land(tmp_path / "pool", workers=2)

    assert {k: [asdict(o) for o in v] for k, v in serial.items()} == {k: [asdict(o) for o in v] for k, v in pooled.items()}
    statuses = [o.status for o in serial["localscore"]]
    assert "rejected" in statuses  # a "Result not found" page
    assert sum(sum(o.quarantined.values()) for o in serial["localscore"]) > 0
    assert any("-" in f.rsplit("/", 1)[-1] for o in serial["localscore"] for f in o.files)  # batch files
    # every landing file and ledger entry byte for byte (Parquet files carry no wall-clock values)
    a, b = _files(tmp_path / "serial" / "landing"), _files(tmp_path / "pool" / "landing")
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    for name in SOURCES:
        for ent in load_sources(include_external=False)[name].entities:
            glob = f"landing/{name}/{ent.name}/*.parquet"
            assert _rows(tmp_path / "serial" / glob) == _rows(tmp_path / "pool" / glob)
    quarantine = "landing/_quarantine/localscore/*.parquet"
    assert _rows(tmp_path / "serial" / quarantine) == _rows(tmp_path / "pool" / quarantine)


def test_pool_stops_at_a_failed_payload_as_in_process_landing_does(tmp_path, monkeypatch):
    monkeypatch.setattr(lander_module, "BATCH_PAYLOADS", 150)
    store = _raw(tmp_path / "serial")
    page = _api_page(store)
    for r in page:
        r["created_at"] = "2019-01-01 00:00:00"  # before LocalScore existed: every run quarantined
    entries = list(store.payloads("localscore"))
    middle = entries[len(entries) // 2].fetched_at  # lands right after that payload: a later segment
    store.put("localscore", json.dumps(page).encode(), url=API_URL, fetched_at=middle)
    shutil.copytree(tmp_path / "serial" / "raw", tmp_path / "pool" / "raw")
    errors, outcomes = [], []
    # another thread running, as under Dagster: the pool's workers come from a forkserver, not fork
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    for side, workers in (("serial", 1), ("pool", 2)):
        lander = Lander(tmp_path / side / "landing", RawStore(tmp_path / side / "raw"), log=lambda m: None)
        with pytest.raises(SourceFailed) as err:
            lander.land_pending(load_sources(include_external=False)["localscore"], workers=workers, pool_min=0)
        errors.append(str(err.value))
        outcomes.append([asdict(o) for o in lander.outcomes("localscore")])
        assert outcomes[-1][-1]["status"] == "failed"
        assert len(outcomes[-1]) > 150 and len(lander.pending("localscore")) > 150
    assert "zero valid rows" in errors[0] and errors[0] == errors[1]
    stop.set()
    assert outcomes[0] == outcomes[1]
    assert _files(tmp_path / "serial" / "landing") == _files(tmp_path / "pool" / "landing")

"""The damage check names every kind of raw-store damage (ingest/integrity.py), and the raw manifest
and ledger log, parsed once per process while unchanged (ingest/file_memo.py), are parsed again
after every kind of change: an append, a rewrite, a forgotten ledger entry."""
from __future__ import annotations

import json
import os

from ingest import integrity
from ingest.integrity import landing_problems, raw_problems
from ingest.landing.ledger import Ledger, PayloadOutcome
from ingest.raw_store import RawStore


def stored(tmp_path, n: int = 3) -> tuple[RawStore, list]:
    store = RawStore(tmp_path / "raw")
    entries = [store.put("src", f'{{"n": {i}}}'.encode(), url=f"http://x/{i}", fetched_at=f"2026-11-0{i + 1}T00:00:00Z")[0]
               for i in range(n)]
    return store, entries


def test_an_intact_store_has_no_problems(tmp_path):
    store, _ = stored(tmp_path)
    assert raw_problems(store, "src") == []


def test_each_kind_of_raw_damage_is_named(tmp_path):
    store, (first, second, third) = stored(tmp_path)
    (store.root / first.path).unlink()  # a line without its blob
    (store.root / second.path).write_bytes(b"longer than it was")  # a blob of another size
    stray = store.root / "src" / "2026" / "11" / "09" / "stray.json"  # a blob without a line
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"{}")
    with store.manifest_path("src").open("a") as fh:
        fh.write('{"path": "src/torn\n')  # a torn line
    problems = raw_problems(store, "src")
    assert problems == [
        f"raw/{first.path}: missing (line 1 of raw/src/manifest.jsonl lists it)",
        f"raw/{second.path}: 18 bytes, the manifest says {second.bytes}",
        "raw/src/manifest.jsonl: line 4 is not a manifest row (torn or edited)",
        "raw/src/2026/11/09/stray.json: no line in raw/src/manifest.jsonl (manifest truncated?)",
    ]
    assert third.path not in " ".join(problems)


def test_a_manifest_parsed_while_landing_is_not_read_again_yet_each_damage_is_named(tmp_path, monkeypatch):
    store, (first, second, _third) = stored(tmp_path)
    store.entries("src")  # as landing parses it: kept while the file is unchanged
    read_by_line = []
    real = integrity._raw_problems_by_line
    monkeypatch.setattr(integrity, "_raw_problems_by_line", lambda *a: read_by_line.append(a) or real(*a))
    assert raw_problems(store, "src") == [] and read_by_line == []
    (store.root / first.path).unlink()  # none of these changes the manifest
    assert raw_problems(store, "src") == [f"raw/{first.path}: missing (line 1 of raw/src/manifest.jsonl lists it)"]
    (store.root / first.path).write_bytes(b'{"n": 0}')
    (store.root / second.path).write_bytes(b"longer than it was")
    assert raw_problems(store, "src") == [f"raw/{second.path}: 18 bytes, the manifest says {second.bytes}"]
    (store.root / second.path).write_bytes(b'{"n": 1}')
    stray = store.root / "src" / "stray.json"
    stray.write_bytes(b"{}")
    assert raw_problems(store, "src") == ["raw/src/stray.json: no line in raw/src/manifest.jsonl (manifest truncated?)"]
    stray.unlink()
    assert raw_problems(store, "src") == []
    assert len(read_by_line) == 3  # only to name what was found


def test_a_landing_file_unlike_its_ledger_is_named(tmp_path):
    store, entries = stored(tmp_path)
    landing = tmp_path / "landing"
    (landing / "src" / "items").mkdir(parents=True)
    good, bad = landing / "src" / "items" / "a.parquet", landing / "src" / "items" / "b.parquet"
    good.write_bytes(b"a")
    bad.write_bytes(b"b")
    from ingest.raw_store import sha256_hex

    Ledger(landing, "src").record([
        PayloadOutcome(sha256=entries[0].sha256, fetched_at=entries[0].fetched_at, url=entries[0].url, status="landed",
                       files={"src/items/a.parquet": sha256_hex(b"a"), "src/items/b.parquet": sha256_hex(b"b")})])
    assert landing_problems(landing, store, "src") == []
    bad.write_bytes(b"B")  # same size, one byte flipped
    (landing / "src" / "items" / "a.parquet").unlink()
    assert landing_problems(landing, store, "src") == [
        f"landing/src/items/a.parquet: missing (the ledger of payload {entries[0].sha256[:12]} lists it)",
        "landing/src/items/b.parquet: sha256 differs from the ledger (damaged; delete it and "
        "landing/src/_ledger/ entries of its payloads to land them again from raw)"]


def test_the_raw_manifest_is_read_again_after_an_append_or_a_rewrite(tmp_path):
    store, entries = stored(tmp_path)
    assert [e.sha256 for e in store.entries("src")] == [e.sha256 for e in entries]
    added, _ = store.put("src", b'{"n": 9}', url="http://x/9", fetched_at="2026-11-09T00:00:00Z")
    assert store.entries("src")[-1] == added  # an append
    store.remove_entries("src", lambda e: e.url == "http://x/0")  # a rewrite (os.replace)
    assert [e.url for e in store.entries("src")] == ["http://x/1", "http://x/2", "http://x/9"]
    # the list handed out is the caller's own
    store.entries("src").clear()
    assert len(store.entries("src")) == 3


def test_the_ledger_is_read_again_after_a_record_or_a_forget(tmp_path):
    ledger = Ledger(tmp_path / "landing", "src")

    def outcome(i: int) -> PayloadOutcome:
        return PayloadOutcome(sha256=f"{i:064x}", fetched_at=f"2026-11-0{i}T00:00:00Z", url=f"u{i}", status="landed")

    ledger.record([outcome(1), outcome(2)])
    assert [o.url for o in ledger.outcomes()] == ["u1", "u2"]
    ledger.record([outcome(3)])
    assert [o.url for o in ledger.outcomes()] == ["u1", "u2", "u3"]
    ledger.forget(outcome(2).sha256)  # the log keeps its line; the entry file is gone
    assert [o.url for o in ledger.outcomes()] == ["u1", "u3"]
    # a ledger file the log lacks (written by an older landing) is read and added to the log
    doc = json.loads((ledger.dir / f"{outcome(3).sha256}.json").read_text())
    doc.update(sha256=f"{4:064x}", url="u4", fetched_at="2026-11-04T00:00:00Z")
    (ledger.dir / f"{4:064x}.json").write_text(json.dumps(doc))
    assert [o.url for o in ledger.outcomes()] == ["u1", "u3", "u4"]
    log_lines = (ledger.dir / "_outcomes.jsonl").read_text().splitlines()
    assert json.loads(log_lines[-1])["url"] == "u4"
    assert os.path.exists(ledger.dir / f"{4:064x}.json")


def test_what_publish_reports_of_the_sources_is_kept_while_no_raw_manifest_changes(tmp_path, monkeypatch):
    """A refresh works out `sources_meta` before dbt, while landing's parse is at hand; publish reads
    it after. It is worked out again after any raw manifest changes, and each caller gets a copy."""
    from ingest import config
    from publish import report

    monkeypatch.setenv("BENCHWH_HOME", str(tmp_path))
    worked_out = []
    real = report._sources_meta
    monkeypatch.setattr(report, "_sources_meta", lambda *a: worked_out.append(1) or real(*a))
    store = RawStore(config.raw_dir())
    store.put("openrouter", b'{"data": []}', url="http://x/models", fetched_at="2026-11-01T00:00:00Z")
    first = report.sources_meta()
    assert first["openrouter"]["last_fetch"] == "2026-11-01T00:00:00Z" and first["openrouter"]["demo"] is False
    first["openrouter"]["last_fetch"] = "changed by the caller"
    assert report.sources_meta()["openrouter"]["last_fetch"] == "2026-11-01T00:00:00Z"
    assert len(worked_out) == 1
    store.put("openrouter", b'{"data": [1]}', url="http://x/models", fetched_at="2026-11-02T00:00:00Z")
    assert report.sources_meta()["openrouter"]["last_fetch"] == "2026-11-02T00:00:00Z"
    assert len(worked_out) == 2

"""The damage check names every kind of raw-store damage (ingest/integrity.py), and the raw manifest
and ledger log, parsed once per process while unchanged (ingest/file_memo.py), are parsed again
after every kind of change: an append, a rewrite, a forgotten ledger entry."""
from __future__ import annotations

import dataclasses
import json
import os

from ingest import file_memo, integrity
from ingest.files import file_line_chunks
from ingest.integrity import landing_problems, raw_problems
from ingest.landing.ledger import Ledger, PayloadOutcome
from ingest.raw_store import RawStore


def put_numbered(store: RawStore, i: int):
    """Payload i of the source `src`, fetched on day i + 1 of November 2026."""
    return store.put("src", f'{{"n": {i}}}'.encode(), url=f"http://x/{i}", fetched_at=f"2026-11-0{i + 1}T00:00:00Z")[0]


def stored(tmp_path, n: int = 3) -> tuple[RawStore, list]:
    store = RawStore(tmp_path / "raw")
    return store, [put_numbered(store, i) for i in range(n)]


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


def test_a_batch_inside_a_batch_joins_it_and_the_outer_one_writes_every_row(tmp_path):
    """The bench generator batches a day at a time; a caller may wrap it in a batch of its own."""
    store = RawStore(tmp_path / "raw")
    with store.batched():
        first = put_numbered(store, 0)
        with store.batched():
            inner = [put_numbered(store, 1), put_numbered(store, 2)]
        assert store.entries("src") == []  # still the outer batch's
        last = put_numbered(store, 3)
    assert store.entries("src") == [first, *inner, last]
    with store.batched():  # the store batches again afterwards
        put_numbered(store, 4)
    assert len(store.entries("src")) == 5


def test_the_raw_manifest_reads_the_same_entries_at_once_or_line_by_line(tmp_path):
    """Parsed as one array when every line is whole; a blank line is skipped and a bad one raises,
    as line by line. An entry of an older shape (no `final_url`, `parser_version`) gets the defaults;
    one with a field RawEntry does not have fails as it did."""
    import pytest

    from ingest.raw_store import RawEntry

    store, entries = stored(tmp_path)
    manifest = store.manifest_path("src")
    assert store.entries("src") == entries and all(type(e) is RawEntry for e in store.entries("src"))
    assert {e: 1 for e in store.entries("src")}.keys() == {e: 1 for e in entries}.keys()  # hashable, equal
    with pytest.raises(dataclasses.FrozenInstanceError):
        store.entries("src")[0].url = "changed"

    old = {k: v for k, v in dataclasses.asdict(entries[0]).items() if k not in ("final_url", "parser_version")}
    lines = manifest.read_text().split("\n")[:-1]
    manifest.write_text("\n".join(["", *lines, "   ", json.dumps(old)]) + "\n")  # blank lines, no newline lost
    file_memo._KEPT.clear()
    assert store.entries("src") == [*entries, dataclasses.replace(entries[0], final_url=None, parser_version=None)]

    manifest.write_text("\n".join([*lines, json.dumps({**old, "colour": "red"})]) + "\n")  # an unknown field
    file_memo._KEPT.clear()
    with pytest.raises(TypeError):
        store.entries("src")
    manifest.write_text("\n".join([*lines, lines[0][:50]]) + "\n")  # a torn line: an error, as ever
    file_memo._KEPT.clear()
    with pytest.raises(ValueError):
        store.entries("src")


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


def test_the_ledger_log_is_read_whole_or_line_by_line_with_the_same_outcomes(tmp_path):
    """The log is parsed as one array; a torn or bad line sends it line by line without that line.
    Entries of every shape come out as the ledger files say, and a whole log is never appended to."""
    ledger = Ledger(tmp_path / "landing", "src")
    entries = [PayloadOutcome(sha256=f"{i:064x}", fetched_at=f"2026-11-0{i}T00:00:00Z", url=f"u{i}\u2028",
                              status="landed", parsed={"items": i}, files={f"src/items/{i}.parquet": "ab"})
               for i in (1, 2, 3)]
    ledger.record(entries)
    log = ledger.dir / "_outcomes.jsonl"
    # a line separator inside a value, as a writer with ensure_ascii=False leaves it: still one line
    log.write_text("".join(json.dumps(dataclasses.asdict(e), ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    whole = log.read_bytes()
    assert ledger.outcomes() == entries
    assert all(type(o) is PayloadOutcome for o in ledger.outcomes())
    assert log.read_bytes() == whole  # every entry was in the log: nothing added

    # an entry of an older shape (no `files`, no `quarantined`): the dataclass's defaults
    old = {"sha256": f"{4:064x}", "fetched_at": "2026-11-04T00:00:00Z", "url": "u4", "status": "rejected",
           "reason": "not JSON", "parsed": {}, "landed": {}}
    (ledger.dir / f"{4:064x}.json").write_text(json.dumps(old))
    with log.open("a") as fh:
        fh.write(json.dumps(old) + "\n")
    older = PayloadOutcome(**old)
    assert ledger.outcomes() == [*entries, older] and ledger.outcomes()[-1].files == {}

    # a torn line between whole ones, then a torn last line: the whole lines are read, nothing lost
    lines = log.read_text(encoding="utf-8").split("\n")
    log.write_text("\n".join([lines[0], lines[1][:57], *lines[1:4]]) + "\n" + lines[0][:80], encoding="utf-8")
    torn = log.read_bytes()
    assert ledger.outcomes() == [*entries, older]
    assert log.read_bytes() == torn


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


def test_line_chunks_give_the_lines_a_split_on_newline_gives(tmp_path):
    """Manifests and ledger logs are read a chunk of lines at a time (never whole as text): at any
    chunk size the lines are those of str.split("\\n") less the empty one after the last newline;
    a "\\r" or a line separator inside a line does not end it."""
    path = tmp_path / "log.jsonl"
    for body in ["", "a\n", "a", "a\nb", "a\n\nb\n", "a\r\nb\u2028c\rd\n", "x\n" * 5]:
        path.write_bytes(body.encode("utf-8"))
        expected = body.split("\n")
        if expected[-1] == "":
            expected.pop()
        for size in (1, 2, 3, 1000):
            chunks = list(file_line_chunks(path, size))
            assert [line for chunk in chunks for line in chunk] == expected, (body, size)
            assert all(0 < len(chunk) <= size for chunk in chunks)
    assert list(file_line_chunks(tmp_path / "absent.jsonl")) == []


def test_a_payload_read_back_holds_one_copy_of_its_hash_url_and_time(tmp_path):
    """What keeps a refresh at scale 10 (a million payloads) in memory: the raw manifest's entry,
    the ledger's outcome and the ledger's file name share one string object for the hash, URL and
    time; equal count maps are one object; neither holds a per-instance __dict__."""
    store = RawStore(tmp_path / "raw")
    entries = [store.put("src", f"body {i}".encode(), url=f"https://example.org/{i}",
                         fetched_at=f"2026-11-0{i}T00:00:00Z")[0] for i in (1, 2, 3)]
    ledger = Ledger(tmp_path / "landing", "src")
    # outcomes of their own strings, as the ledger's JSON gives them back
    ledger.record([PayloadOutcome(**json.loads(json.dumps({"sha256": e.sha256, "fetched_at": e.fetched_at,
                                                            "url": e.url, "status": "landed",
                                                            "parsed": {"items": 2}, "landed": {"items": 2}})))
                   for e in entries])
    file_memo.forget_all()
    read, outcomes, names = store.entries("src"), ledger.outcomes(), ledger.shas()
    for entry, outcome in zip(read, outcomes, strict=True):
        assert outcome.sha256 is entry.sha256 and outcome.url is entry.url
        assert outcome.fetched_at is entry.fetched_at
        assert any(name is entry.sha256 for name in names)
        assert outcome.parsed is outcomes[0].parsed and outcome.landed is outcomes[0].parsed
        assert not hasattr(entry, "__dict__") and not hasattr(outcome, "__dict__")

"""Issue #12 items 8 and 14 (names): full-match patterns, one length limit and one rule for
control characters and bidirectional marks, whatever format a name arrives in."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from ingest import config
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.payload import payload_bytes, validate_payload
from tests.helpers.hostile import good_payload, lb_record
from tests.helpers.runs import parse_text
from tests.helpers.pipeline import run_benchwh

RECEIVED = datetime(2026, 2, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("name", ["name\n", "name\r\n", " name", "na\u202eme"])
def test_sources_new_refuses_a_name_with_trailing_newline(name, tmp_path):
    before = sorted(p.name for p in (config.project_root() / "ingest" / "sources").iterdir())
    proc = run_benchwh(tmp_path / "warehouse", "sources", "new", name)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("benchwh: invalid source name") and len(proc.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in (config.project_root() / "ingest" / "sources").iterdir()) == before


def test_llama_bench_gpu_info_longer_than_the_name_limit_is_refused():
    text = json.dumps([lb_record(gpu_info="X" * 10_000)])
    with pytest.raises(RunRejected, match="gpu_info is longer than 500 characters"):
        parse_text(text)
    run, = parse_text(json.dumps([lb_record(gpu_info="Y" * 500)]))  # the limit itself is allowed
    assert len(run.gpu) == 500


@pytest.mark.parametrize("bad", ["RTX\n4090", "RTX\r4090", "RTX\t4090", "RTX \u202e0904", "RTX\u2066 4090", "RTX\x85 4090"])
def test_control_characters_and_bidi_marks_refused_in_every_format(bad):
    with pytest.raises(RunRejected, match="control characters or bidirectional marks"):
        validate_payload(payload_bytes(good_payload(**{"machine.gpu": bad})), RECEIVED)
    with pytest.raises(RunRejected, match="control characters or bidirectional marks"):
        parse_text(json.dumps([lb_record(gpu_info=bad)]))
    with pytest.raises(RunRejected, match="control characters or bidirectional marks"):
        parse_text(json.dumps([lb_record()]), meta={"gpu": bad})


def test_rejected_junk_kept_in_raw_within_its_budget(home, tmp_path, monkeypatch):
    """The probe's zip of junk added 100 MB to raw/: rejected bytes are now kept within a budget,
    the newest kept and the oldest pruned, and raw stays whole (every line has its blob)."""
    from ingest.integrity import check_home
    from ingest.raw_store import RawStore
    from ingest.sources.runs.add import REJECTED_KEEP_FILE_BYTES, add_paths

    monkeypatch.setenv("BENCHWH_REJECTED_RAW_MB", "0.2")

    def raw_bytes() -> int:
        return sum(p.stat().st_size for p in (home / "raw" / "runs").rglob("*.json"))

    def kept_names() -> set[str]:
        return {e.url.rsplit("/", 1)[-1] for e in RawStore(home / "raw").entries("runs")}

    for batch in ("a", "b"):  # two drops of junk, one after the other
        junk = tmp_path / f"junk-{batch}"
        junk.mkdir()
        for i in range(30):
            (junk / f"{batch}{i:02d}.txt").write_text(f"junk {batch} {i} " + "not a benchmark output " * 400)  # ~9 KB
        (junk / f"{batch}-big.txt").write_text("x" * (REJECTED_KEEP_FILE_BYTES + 1))
        results = add_paths([junk], home)
        assert len(results) == 31 and all(r.status == "rejected" for r in results)  # every one reported
        assert 0 < raw_bytes() <= 200_000
    names = kept_names()
    assert names and all(n.startswith("b") for n in names)  # the newer drop kept, the older one pruned
    assert not any(n.endswith("-big.txt") for n in names)  # above a file's share: reported, not kept
    assert check_home(home, ["runs"]) == []  # pruning took lines and blobs together
    add_paths([tmp_path / "junk-a"], home)  # the older drop again: still within the budget
    assert 0 < raw_bytes() <= 200_000 and check_home(home, ["runs"]) == []
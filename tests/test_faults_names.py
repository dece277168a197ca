"""Issue #12 items 8 and 14 (names): full-match patterns, one length limit and one rule for
control characters and bidirectional marks, whatever format a name arrives in."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from ingest import config
from ingest.runs.errors import RunRejected
from ingest.runs.payload import payload_bytes, validate_payload
from tests.hostile.generate import good_payload, lb_record
from tests.test_runs_imports import parse_text
from tests.pipeline_helpers import run_benchwh

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
    with pytest.raises(RunRejected, match="gpu: longer than 500 characters"):
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

"""Issue #12 items 4, 6 and 12: one outlier snapshot cannot block a source, damaged landing files
and a truncated raw manifest stop the publish naming the file, and a payload that is not what
the source expects is shown as rejected (file and first bytes) on every refresh that fetches it."""
from __future__ import annotations

import json

import pytest

from ingest.source import SourceFailed
from ingest.sources.openrouter import OpenRouterSource
from tests.helpers.faults import files_outside
from tests.helpers.loopback import LoopbackServer, Reply
from tests.helpers.pipeline import file_sha256, run_benchwh
from tests.helpers.landing import snapshot, store_with


def test_one_outlier_snapshot_does_not_block_the_source(tmp_path, monkeypatch):
    # five normal snapshots (12 models), one of 10,000, then normal ones again
    bodies = [snapshot(d) for d in range(1, 6)] + [snapshot(6, n_models=10_000), snapshot(7), snapshot(8)]
    store, lander = store_with(tmp_path, bodies)
    outcomes = lander.land_pending(OpenRouterSource())
    assert [o.status for o in outcomes] == ["landed"] * 8
    # a real drop still fails against the median, and the share is a per-source setting
    store.put("openrouter", snapshot(9, n_models=5), url="u", fetched_at="2026-10-09T06:00:00Z")
    with pytest.raises(SourceFailed, match="fewer than half of the last good landings' median"):
        lander.land_pending(OpenRouterSource())
    store.put("openrouter", snapshot(10, n_models=5), url="u", fetched_at="2026-10-10T06:00:00Z")
    monkeypatch.setenv("BENCHWH_OPENROUTER_VOLUME_MIN_SHARE", "0.1")
    assert [o.status for o in lander.land_pending(OpenRouterSource())] == ["landed"]


def _refresh_fails_naming(home, expect: str):
    before, outside = file_sha256(home / "benchmarks.duckdb"), files_outside(home)
    proc = run_benchwh(home, "refresh", "--no-fetch")
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("benchwh: refresh failed:") and "damage found" in last and expect in last, last
    assert "Traceback" not in proc.stderr
    assert file_sha256(home / "benchmarks.duckdb") == before
    assert files_outside(home) == outside


def test_flipped_byte_in_a_landing_file_stops_the_publish(warehouse_copy):
    home = warehouse_copy
    ledger = home / "landing" / "localscore" / "_ledger"
    rel = next(f for p in sorted(ledger.glob("*.json")) for f in json.loads(p.read_text()).get("files", {}))
    target = home / "landing" / rel
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    _refresh_fails_naming(home, f"landing/{rel}: sha256 differs from the ledger")


def test_truncated_raw_manifest_stops_the_publish(warehouse_copy):
    home = warehouse_copy
    manifest = home / "raw" / "openrouter" / "manifest.jsonl"
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(lines[:2]))  # the probe lost most of its lines
    _refresh_fails_naming(home, "no line in raw/openrouter/manifest.jsonl")


def test_html_payload_is_shown_as_rejected_on_every_refresh(warehouse_copy):
    home = warehouse_copy
    html = b"<!DOCTYPE html><html><body>Service moved</body></html>"
    with LoopbackServer() as srv:
        srv.route("/api/v1/models", Reply(200, html, {"Content-Type": "text/html"}))
        for _ in range(2):  # the second time the body is already stored: still shown
            proc = run_benchwh(home, "refresh", "--source", "openrouter", BENCHWH_OPENROUTER_URL=srv.url + "/api/v1")
            assert "1 payloads rejected" in proc.stderr, proc.stderr[-2000:]
            line = next(l for l in proc.stderr.splitlines() if "openrouter: rejected raw/openrouter/" in l)
            assert "not JSON" in line and "b'<!DOCTYPE html><html>" in line, line
    assert "Traceback" not in proc.stderr


def test_outliers_in_most_of_the_last_five_block_only_until_normal_snapshots_outnumber_them(tmp_path):
    # five normal snapshots (12 models), three of 2,000 (the median becomes theirs), then normal again
    bodies = [snapshot(d) for d in range(1, 6)] + [snapshot(d, n_models=2_000) for d in (6, 7, 8)]
    store, lander = store_with(tmp_path, bodies)
    assert [o.status for o in lander.land_pending(OpenRouterSource())] == ["landed"] * 8
    refusals = []
    for day in range(9, 15):
        store.put("openrouter", snapshot(day), url="u", fetched_at=f"2026-10-{day:02d}T06:00:00Z")
        try:
            lander.land_pending(OpenRouterSource())
        except SourceFailed as exc:
            refusals.append(day)
            message = str(exc)
            assert "fewer than half of the last good landings' median" in message
            assert "BENCHWH_OPENROUTER_VOLUME_MIN_SHARE=0" in message and "\n" not in message
    # three refused normal snapshots outnumber the outliers in the last five: the fourth lands, and
    # every later one; nothing was blocked for good
    assert refusals == [9, 10, 11]
    assert [o.status for o in lander.outcomes("openrouter")][-3:] == ["landed"] * 3


def test_a_refusal_of_another_kind_does_not_count_toward_the_baseline(tmp_path):
    from ingest.landing.rules import counts_for_volume
    from ingest.landing.ledger import PayloadOutcome

    zero = PayloadOutcome("a", "t", "u", "failed", "payload a from u has zero valid rows", landed={"models": 0})
    volume = PayloadOutcome("b", "t", "u", "failed", "payload b has 12 valid rows, fewer than half of ...",
                            landed={"models": 12})
    assert not counts_for_volume(zero) and counts_for_volume(volume)

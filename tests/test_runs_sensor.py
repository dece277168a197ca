"""The inbox sensor (DESIGN §3): each dropped file is landed once, then moved to processed/ or
rejected/ (with a .reason); anything new requests a no-fetch refresh. The end-to-end tests run
the real refresh job and read the published warehouse."""
from __future__ import annotations

import base64
import json
import statistics

import dagster as dg
import duckdb
import pytest

from ingest.sources.runs import dsse
from tests.helpers.keys import trust
from tests.helpers.runs import TEN, evaluate, signed_ten


@pytest.fixture
def key(tmp_path, home):
    dsse.write_private_key(tmp_path / "k.pem")
    key = dsse.load_private_key(tmp_path / "k.pem")
    trust(home, key, "alice")
    return key


def drop_three(home, key) -> dict:
    inbox = home / "inbox"
    inbox.mkdir(exist_ok=True)
    doc, body = signed_ten(key)
    (inbox / "a-good.json").write_bytes(body)
    (inbox / "b-copy.json").write_bytes(body)
    env = json.loads(body)
    raw = bytearray(base64.b64decode(env["payload"]))
    raw[60] ^= 0x04
    env["payload"] = base64.b64encode(bytes(raw)).decode()
    (inbox / "c-tampered.json").write_text(json.dumps(env))
    return doc


def test_sensor_lands_each_file_once_and_sorts_them(home, key):
    drop_three(home, key)
    result, cursor = evaluate()
    assert isinstance(result, dg.RunRequest)
    assert result.tags["benchwh/sources"] == "none" and result.job_name in (None, "refresh")

    inbox = home / "inbox"
    assert sorted(p.name for p in inbox.iterdir() if p.is_file()) == []
    assert sorted(p.name for p in (inbox / "processed").iterdir()) == [
        "a-good.json", "a-good.json.report", "b-copy.json", "b-copy.json.report"]
    # each processed file says what became of it, as `runs add` would
    assert (inbox / "processed" / "a-good.json.report").read_text().startswith("a-good.json: accepted as ")
    assert "duplicate" in (inbox / "processed" / "b-copy.json.report").read_text()
    assert sorted(p.name for p in (inbox / "rejected").iterdir()) == ["c-tampered.json", "c-tampered.json.reason"]
    reason = (inbox / "rejected" / "c-tampered.json.reason").read_text()
    assert "does not verify" in reason and "c-tampered.json" in reason
    runs = duckdb.sql(f"select count(*) from read_parquet('{home}/landing/runs/runs/[0-9a-f]*.parquet')").fetchall()
    assert runs == [(1,)]
    # the tampered file is in the quarantine with its reason (rebuilt from raw like the rest)
    quarantine = duckdb.sql(f"select check_name, failure_value from read_parquet("
                            f"'{home}/landing/_quarantine/runs/*.parquet')").fetchall()
    assert len(quarantine) == 1 and quarantine[0][0] == "bad_signature"
    assert "does not verify" in quarantine[0][1]

    # nothing new: the next evaluation skips; a re-dropped copy is a duplicate, still no run request
    again, cursor = evaluate(cursor)
    assert isinstance(again, dg.SkipReason)
    (inbox / "d-again.json").write_bytes((inbox / "processed" / "a-good.json").read_bytes())
    again, cursor = evaluate(cursor)
    assert isinstance(again, dg.SkipReason) and "1 duplicate" in str(again.skip_message)
    assert (inbox / "processed" / "d-again.json").exists()


def test_sensor_is_registered_with_the_refresh_job():
    from orchestration.definitions import defs

    sensor = defs.resolve_sensor_def("inbox_sensor")
    assert sensor.job_name == "refresh"


def _published(home, sql, params=()):
    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _expected_interval():
    x = sorted(TEN)
    return statistics.median(x), x[1], x[8]  # n=10: [x(2), x(9)]


@pytest.mark.slow
def test_sensor_end_to_end_publishes_exactly_one_new_run(home, key):
    from orchestration.definitions import defs
    from orchestration.instance import ensure_dagster_home

    doc = drop_three(home, key)
    result, _ = evaluate()
    assert isinstance(result, dg.RunRequest)
    ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        run = defs.resolve_job_def("refresh").execute_in_process(instance=instance, tags=result.tags,
                                                                 raise_on_error=False)
    assert run.success
    runs = _published(home, "select distinct source, source_run_id, trust from marts.fct_speed_measurements "
                            "where source <> 'localscore'")
    assert runs == [("runfile", doc["submission_id"], "signed")]
    median, low, high = _expected_interval()
    summary = _published(home, "select n_runs, n_samples, gen_tps_median, gen_tps_ci_low, gen_tps_ci_high "
                               "from marts.fct_speed_summary where test_profile = 'gen-1k'")
    assert summary == [(1, 10, median, low, high)]
    assert _published(home, "select contributor_name from marts.dim_contributor") == [("alice",)]
    # the inbox report, completed by the publish: where each file's runs went
    text = (home / "inbox" / "processed" / "a-good.json.report").read_text()
    assert "a-good.json: in the site tables" in text, text
    assert not list((home / "inbox" / ".reports-pending").iterdir())


def test_cursor_keeps_a_file_that_could_not_be_moved_from_being_processed_twice(home, key, monkeypatch):
    import orchestration.sensors as sensors

    (home / "inbox").mkdir()
    _, body = signed_ten(key)
    (home / "inbox" / "stuck.json").write_bytes(body)

    def cannot_move(path, folder):
        raise OSError("read-only inbox")

    monkeypatch.setattr(sensors, "_move", cannot_move)
    first, cursor = evaluate()
    assert isinstance(first, dg.RunRequest)
    assert (home / "inbox" / "stuck.json").exists()
    second, cursor = evaluate(cursor)
    assert isinstance(second, dg.SkipReason) and "inbox empty" in str(second.skip_message)
    # without the cursor the same file would be seen again (and be a duplicate)
    third, _ = evaluate(None)
    assert isinstance(third, dg.SkipReason) and "1 duplicate" in str(third.skip_message)

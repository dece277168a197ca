"""Demo data is marked and replaced by live data; one freshness verdict and one count vocabulary."""
from __future__ import annotations

import json
import re

import duckdb
import pytest

from tests.helpers.faults import site  # noqa: F401 (fixture)
from tests.helpers.pipeline import run_benchwh

pytestmark = pytest.mark.slow

DEMO_LOCALSCORE_RUN = "900101"  # a synthetic LocalScore run of the offline recording
DEMO_BOARD_PROFILE = "gen-1k/r3"  # the demo board's signed runs (scripts/recordings/runs.py)


def test_an_offline_build_is_marked_demo_and_judged_as_of_its_recording(warehouse_copy):
    home = warehouse_copy
    manifest = json.loads((home / "exports" / "manifest.json").read_text())
    assert {"openrouter", "localscore", "runs"} <= set(manifest["demo_data"])
    assert manifest["sources"]["openrouter"]["demo"] is True

    status = run_benchwh(home, "status", "--json")
    report = json.loads(status.stdout)
    assert report["published"]["demo_data"] == manifest["demo_data"]
    listed = json.loads(run_benchwh(home, "sources", "list", "--json").stdout)["sources"]
    # the same verdict in both places, judged as of the recording (the blocking check passed too)
    for name in ("openrouter", "grid"):
        assert listed[name]["freshness"] == report["sources"][name]["freshness"] == "fresh"
        assert listed[name]["freshness_as_of"].startswith("recording ")
    text = run_benchwh(home, "status").stdout
    assert "holds DEMO data" in text and "1 versions" not in text
    assert "as of its recording" in text


def test_a_live_refresh_drops_the_demo_data_and_publishes_none_of_it(warehouse_copy, site):  # noqa: F811
    home = warehouse_copy
    _srv, _state, env = site
    proc = run_benchwh(home, "refresh", "--source", "openrouter", "--source", "grid", **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "dropped" in proc.stderr and "demo payloads" in proc.stderr
    # counts: tables in the file and tables exported are told apart, dbt nodes by their kind
    assert "tables published (" in proc.stdout and "exported as Parquet" in proc.stdout
    assert " seeds built" in proc.stderr and "tests passed" in proc.stderr
    # progress, as plain lines (not a terminal): responses fetched, dbt nodes done of total
    assert re.search(r"openrouter: fetching: \d+ responses|dbt: (\d+)/\1 nodes done", proc.stderr)
    assert re.search(r"dbt: (\d+)/\1 nodes done", proc.stderr) and "loading the pipeline" in proc.stderr

    manifest = json.loads((home / "exports" / "manifest.json").read_text())
    assert manifest["demo_data"] == []
    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        demo_rows = con.execute("SELECT count(*) FROM marts.fct_speed_measurements WHERE source_run_id = ?",
                                [DEMO_LOCALSCORE_RUN]).fetchone()[0]
        prices = con.execute("SELECT count(*) FROM marts.fct_api_prices").fetchone()[0]
        board_rows = con.execute("SELECT count(*) FROM marts.fct_speed_measurements WHERE test_name = ?",
                                 [DEMO_BOARD_PROFILE]).fetchone()[0]
    finally:
        con.close()
    assert demo_rows == 0 and board_rows == 0 and prices > 0
    assert "holds DEMO data" not in run_benchwh(home, "status").stdout


def test_the_demo_board_shows_intervals_rank_ranges_and_measured_turn_times(offline_warehouse):
    """Issue 54: the offline demo can show what the leaderboard means. One machine's board of the
    reference page's size (scripts/recordings/runs.py, `board_payloads`): every row pooled from
    several signed runs, intervals that overlap (a rank range such as "2-4 of 13") beside ones that
    do not ("5 of 13"), and turn times the client measured beside the derived ones of LocalScore."""
    manifest = json.loads((offline_warehouse / "exports" / "manifest.json").read_text())
    assert "runs" in manifest["demo_data"]  # still demo data: a live refresh drops it
    con = duckdb.connect(str(offline_warehouse / "benchmarks.duckdb"), read_only=True)
    try:
        boards = con.execute("""
            select hardware_id, test_profile, count(*) as n_rows, max(rank_of) as rank_of
            from site.generation_leaderboard
            group by all
            having count(*) >= 10 and min(n_runs) >= 5 and min(n_samples) > min(n_runs)
            order by n_rows desc, hardware_id, test_profile""").fetchall()
        assert boards, "no board of 10 or more rows, each from 5 or more runs of several repetitions"
        hardware_id, profile, n_rows, rank_of = boards[0]
        assert rank_of == n_rows
        rows = con.execute("""
            select model_name, rank_best, rank_worst, rank_label, gen_tps_ci_low, gen_tps_median,
                   gen_tps_ci_high, interval_method, ttft_ms_median, turn_time_ms_median,
                   is_turn_time_derived
            from site.generation_leaderboard where hardware_id = ? and test_profile = ?
            order by gen_tps_median desc""", [hardware_id, profile]).fetchall()
        derived = con.execute("""select count(*) from site.generation_leaderboard
                                 where is_turn_time_derived""").fetchone()[0]
        unresolved = con.execute("""
            select m.name from marts.dim_model as m
            where m.model_id in (select model_id from site.generation_leaderboard
                                 where hardware_id = ? and test_profile = ?)
                and (not m.is_resolved or m.name in (select raw_name from audit.unresolved_names))""",
                                 [hardware_id, profile]).fetchall()
    finally:
        con.close()

    ranged = [r for r in rows if r[1] < r[2]]
    single = [r for r in rows if r[1] == r[2]]
    assert len(ranged) >= 2 and len(single) >= 2, [r[3] for r in rows]
    for name, best, worst, label, low, median, high, method, ttft, turn, is_derived in rows:
        assert label == (f"{best} of {n_rows}" if best == worst else f"{best}-{worst} of {n_rows}")
        assert low <= median <= high and method == "order_statistic", name
        # measured by the client: present, not derived, and longer than the wait for the first token
        assert is_derived is False and turn is not None and turn > ttft, name
    # a range spans the rows whose intervals overlap: the ranks it covers are shared, never skipped
    covered = sorted({rank for r in rows for rank in range(r[1], r[2] + 1)})
    assert covered == list(range(1, n_rows + 1))
    assert derived > 0  # LocalScore's turn times stay derived (TTFT + n_gen / speed) and flagged
    assert unresolved == []  # the board's models resolve (catalogue or Hugging Face recording)

"""A real dbt build of the speed facts from LocalScore landing files written here in the landing shape.

Checks what the unit tests cannot: the whole chain (staging -> contract -> resolution -> facts ->
summary) on a real DuckDB file, with a run landed twice (a re-fetched page), an identical
re-submission ten minutes later, messy names of the same card, and an 11-sample leaderboard entry.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ingest.sources import localscore  # module import: pytest would collect test_rows / LocalScoreTestsSchema
from tests.helpers.dbt_build import dbt_build, query
from tests.helpers.resolution import SPEED_SELECT, land_localscore

TESTS = [("pp1024+tg16", 1024, 16), ("pp4096+tg256", 4096, 256)]


def run(run_id: int, at: str, accelerator: str, memory: float, model: str, quant: str) -> dict:
    return localscore.run_row({
        "id": run_id, "created_at": at, "accelerator": accelerator, "accelerator_type": "GPU",
        "accelerator_memory_gb": memory, "model": {"name": model, "quant": quant, "params": 1_500_000_000},
        "runtime": {"name": "llamafile", "version": "0.9.3"}, "system": {"cpu_name": "AMD Ryzen 9 7950X"},
        "avg_prompt_tps": 1.0, "avg_gen_tps": 1.0, "avg_ttft_ms": 1.0, "performance_score": 1.0})


def samples_of(run_id: int, gen_tps: list[float], ttft_ms: float = 100.0, power: float | None = None) -> list[dict]:
    return localscore.test_rows(run_id, [
        {"name": name, "n_prompt": pp, "n_gen": tg, "prompt_tps": 5000.0, "gen_tps": g, "ttft_ms": ttft_ms,
         "avg_time_ms": 1000.0, "power_watts": power}
        for (name, pp, tg), g in zip(TESTS, gen_tps)])


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    work = tmp_path_factory.mktemp("speedmarts")
    home = work / "warehouse"
    llama = ("Llama 3.2 1B Instruct", "Q4_K - Medium")
    # payload A: run 101, its identical re-submission 102 ten minutes later, and run 120 (Qwen)
    runs_a = [run(101, "2025-03-19 21:50:00", "NVIDIA GeForce RTX 4090", 23.99, *llama),
              run(102, "2025-03-19 22:00:00", "NVIDIA  GeForce RTX 4090", 23.99, *llama),
              run(120, "2025-03-19 23:00:00", "NVIDIA GeForce RTX 4090", 23.99, "Qwen2.5 14B Instruct", "Q4_K - Medium")]
    tests_a = samples_of(101, [300.0, 250.0], power=400.0) + samples_of(102, [300.0, 250.0], power=400.0) + samples_of(120, [60.0, 55.0])
    land_localscore(home, runs_a, tests_a, name="payload-a", fetched_at="2026-01-01 00:00:00")
    # payload B, a day later: run 101 re-fetched (paging overlap) and ten more runs, one a day
    runs_b = [run(101, "2025-03-19 21:50:00", "NVIDIA GeForce RTX 4090", 23.99, *llama)]
    tests_b = samples_of(101, [300.0, 250.0], power=400.0)
    for i in range(10):
        rid = 103 + i
        runs_b.append(run(rid, f"2025-03-{20 + i:02d} 12:00:00", "nvidia geforce rtx 4090", 24.0, *llama))
        tests_b += samples_of(rid, [201.0 + i, 240.0])
    land_localscore(home, runs_b, tests_b, name="payload-b", fetched_at="2026-01-02 00:00:00")
    return dbt_build(home, work, SPEED_SELECT, "--indirect-selection", "cautious")


def test_a_run_landed_twice_counts_once_and_resubmissions_are_flagged(build):
    rows = query(build, """
        select source_run_id, count(*), bool_and(is_duplicate), bool_and(is_resubmission)
        from marts.fct_speed_measurements group by 1 order by 1""")
    by_run = {r[0]: r[1:] for r in rows}
    assert set(by_run) == {str(i) for i in [101, 102, *range(103, 113), 120]}
    assert by_run["101"] == (2, False, False)  # two tests, once each despite two landings
    assert by_run["102"] == (2, True, True)    # identical metrics 10 minutes later
    assert by_run["103"] == (2, False, False)


def test_names_and_quant_resolve_and_turn_time_is_derived(build):
    rows = query(build, """
        select distinct hardware_id, model_id, quant, build_id from marts.fct_speed_measurements
        where source_run_id in ('101', '102', '103')""")
    assert rows == [("nvidia-rtx-4090", "llama-3.2-1b-instruct", "Q4_K_M", "llama-3.2-1b-instruct@Q4_K_M")]
    turn, derived, energy, method = query(build, """
        select turn_time_ms, is_turn_time_derived, energy_j, power_method from marts.fct_speed_measurements
        where source_run_id = '101' and test_name = 'pp1024+tg16'""")[0]
    assert turn == pytest.approx(100.0 + 1000.0 * 16 / 300.0)
    assert derived is True
    assert energy == pytest.approx(400.0)  # 400 W over the test's 1000 ms
    assert method == "sensor"
    builds = query(build, "select build_id, is_measured from marts.dim_model_build where model_id = 'llama-3.2-1b-instruct'")
    assert ("llama-3.2-1b-instruct@Q4_K_M", True) in builds


def test_summary_median_interval_and_ranks(build):
    row = query(build, """
        select n_runs, n_samples, gen_tps_median, gen_tps_ci_low, gen_tps_ci_high, interval_method,
               rank_best, rank_worst, rank_of, turn_time_ms_median
        from marts.fct_speed_summary
        where hardware_id = 'nvidia-rtx-4090' and model_id = 'llama-3.2-1b-instruct'
          and test_profile = 'pp1024+tg16'""")
    # 11 samples (run 102 left out as a duplicate): 201..210 and 300; k = 2 -> [x(2), x(10)]
    assert row == [(11, 11, 206.0, 202.0, 210.0, "order_statistic", 1, 1, 2, pytest.approx(100.0 + 16000.0 / 206.0, rel=1e-3))]
    qwen = query(build, """
        select n_samples, gen_tps_ci_low, gen_tps_ci_high, interval_method, rank_best, rank_worst, rank_of
        from marts.fct_speed_summary
        where model_id = 'qwen2.5-14b-instruct' and test_profile = 'pp1024+tg16'""")
    assert qwen == [(1, 60.0, 60.0, "min_max", 2, 2, 2)]


def test_build_only_schemas_stay_in_dbts_file_and_the_publish_copy_drops_them(build, tmp_path):
    """dbt's own file keeps every layer (a data engineer's `dbt run -s int_x` finds its view); the
    copy a publish finalizes keeps only the published schemas, with no view left reading landing files."""
    from publish.publish import PUBLISHED_SCHEMAS, finalize_build

    schemas_sql = "select distinct schema_name from duckdb_tables() union select distinct schema_name from duckdb_views() where not internal"
    built = {r[0] for r in query(build, schemas_sql)}
    assert {"marts", "audit", "staging", "intermediate"} <= built
    copy = tmp_path / "publish-copy.duckdb"
    shutil.copyfile(build, copy)
    finalize_build(copy)
    published = {r[0] for r in query(copy, schemas_sql)}
    assert {"marts", "audit"} <= published <= set(PUBLISHED_SCHEMAS)
    assert not Path(str(copy) + ".wal").exists()

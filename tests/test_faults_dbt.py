"""A dbt model error and a dbt test failure never damage the last good warehouse."""
from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from tests.helpers.faults import assert_failed_cleanly, published, site  # noqa: F401 (fixtures)
from tests.helpers.landing import land_recording
from tests.helpers.pipeline import file_sha256, run_benchwh

pytestmark = pytest.mark.slow


def test_dbt_model_error(published, site):
    home = published
    before = file_sha256(home / "benchmarks.duckdb")
    broken = home / "landing" / "grid" / "intensity" / "zz-broken.parquet"
    broken.write_bytes(b"this is not parquet")
    try:
        proc = run_benchwh(home, "refresh", "--no-fetch", BENCHWH_DEBUG="1")
    finally:
        broken.unlink()
    # BENCHWH_DEBUG=1: the failing step's traceback, then the same one line as without it
    assert "Traceback of the failing step" in proc.stderr
    assert_failed_cleanly(home, proc, before, "dbt", traceback_ok=True)
    last = proc.stderr.strip().splitlines()[-1]
    # the root cause from run_results.json, not dbt's "Runtime Error in model ..." wrapper line
    assert "parquet" in last.lower() and "Error in model" not in last, last
    # where to look next: the run id and the dbt log, which exists
    run_id, log = re.search(r"\(run ([0-9a-f-]{36}), log (\S+)\)", last).groups()
    assert Path(log).is_file() and run_id in Path(log).name
    # dbt's target folder stays (one per home, for dbt's own partial parse); no build file is left
    left = sorted(p.name for p in (home / "build").iterdir() if p.name != "dbt-target")
    assert not left, f"the failed build's files were left behind: {left}"


def test_dbt_test_failure(published, site):
    home = published
    before = file_sha256(home / "benchmarks.duckdb")
    folder = home / "landing" / "grid" / "intensity"
    latest = max((p for p in folder.glob("*.parquet") if not p.name.startswith("_")), key=lambda p: p.stat().st_mtime)
    bad = folder / "zz-implausible.parquet"
    duckdb.sql(f"""
        COPY (SELECT * REPLACE ('Testland' AS area, 5000.0 AS gco2_per_kwh) FROM read_parquet('{latest}') LIMIT 1)
        TO '{bad}' (FORMAT parquet)""")
    try:
        proc = run_benchwh(home, "refresh", "--no-fetch")
    finally:
        bad.unlink()
    assert_failed_cleanly(home, proc, before, "assert_grid_intensity_is_physical")
    # and what it found: the rows the test returned (dbt's own message only counts them)
    assert "failing rows: area=Testland, year=" in proc.stderr.strip().splitlines()[-1]


def landed_entity(home: Path, src, entity: str) -> Path:
    """A source's offline recording landed into a new home: the folder of one of its entities."""
    land_recording(home, src)
    return home / "landing" / src.name / entity


def test_null_in_one_column_names_it(tmp_path):
    """not_null_columns (one test per model) fails on a null in one of its columns, and the reason
    names the test and that column with its null-row count (a real dbt build of the grid staging)."""
    from ingest.sources.grid import GridSource
    from tests.helpers.dbt_build import failed_dbt_build

    home = tmp_path / "warehouse"
    folder = landed_entity(home, GridSource(), "intensity")
    landed = next(p for p in folder.glob("*.parquet") if not p.name.startswith("_"))
    # a new area: the row breaks no unique test, only not-null
    duckdb.sql(f"""
        COPY (SELECT * REPLACE ('Nullland' AS area, NULL::DOUBLE AS gco2_per_kwh) FROM read_parquet('{landed}') LIMIT 1)
        TO '{folder / "zz-null.parquet"}' (FORMAT parquet)""")
    reason = failed_dbt_build(home, tmp_path, ["stg_grid__intensities"])
    assert "dbt fail in test.benchwh.not_null_columns_stg_grid__intensities." in reason, reason
    assert reason.endswith("failing rows: column_name=gco2_per_kwh, null_rows=1"), reason


def test_a_duplicate_key_fails_the_unique_test_and_names_the_key(tmp_path):
    """The key test of the grid staging model catches one row landed twice for the same body, area
    and year (a single row, where test_a_key_test_fails_on_duplicated_rows copies a whole file), and
    the reason quotes the key."""
    from ingest.sources.grid import GridSource
    from tests.helpers.dbt_build import failed_dbt_build

    home = tmp_path / "warehouse"
    folder = landed_entity(home, GridSource(), "intensity")
    landed = next(p for p in folder.glob("*.parquet") if not p.name.startswith("_"))
    duckdb.sql(f"""
        COPY (SELECT * FROM read_parquet('{landed}') WHERE area = 'World' ORDER BY year LIMIT 1)
        TO '{folder / "zz-twice.parquet"}' (FORMAT parquet)""")
    reason = failed_dbt_build(home, tmp_path, ["stg_grid__intensities"])
    assert "dbt fail in test.benchwh.unique_key_stg_grid__intensities" in reason, reason
    assert re.search(r"failing rows: raw_sha256=[0-9a-f]{64}, area=World, year=\d{4}, n_rows=2$", reason), reason


def test_a_value_outside_the_accepted_ones_fails_and_is_named(tmp_path):
    """dbt's accepted_values test on a run's trust catches a value landing never writes (pandera
    quarantines it; here a landing file is written past it), and the reason quotes the value."""
    from ingest.sources.runs.source import RunsSource
    from tests.helpers.dbt_build import failed_dbt_build

    home = tmp_path / "warehouse"
    folder = landed_entity(home, RunsSource(), "runs")
    landed_file = next(p for p in folder.glob("*.parquet") if not p.name.startswith("_"))
    duckdb.sql(f"""
        COPY (SELECT * REPLACE ('trusted-by-me' AS trust, source_run_id || '-x' AS source_run_id)
              FROM read_parquet('{landed_file}') LIMIT 1)
        TO '{folder / "zz-trust.parquet"}' (FORMAT parquet)""")
    reason = failed_dbt_build(home, tmp_path, ["stg_runs__runs"])
    assert "dbt fail in test.benchwh.accepted_values_stg_runs__runs_trust__signed__unverified." in reason, reason
    assert reason.endswith("failing rows: value_field=trusted-by-me, n_records=1"), reason


def test_an_alias_to_an_unknown_id_fails_the_relationships_test(tmp_path):
    """dbt's relationships test on a hand-edited lookup seed catches an alias naming a hardware id
    the catalogue does not have (a typo would send that GPU's runs to no machine), and the reason
    quotes the id. A real dbt build of the two seeds in an edited copy of the dbt project."""
    import shutil

    from tests.helpers.dbt_build import failed_dbt_build
    from tests.helpers.paths import PROJECT_ROOT

    project = tmp_path / "dbt_project"
    shutil.copytree(PROJECT_ROOT / "dbt_project", project, ignore=shutil.ignore_patterns("target", "logs"))
    with open(project / "seeds" / "hardware_aliases.csv", "a", encoding="utf-8") as seed:
        seed.write("NVIDIA GeForce RTX 4090 (typo),nvidia-rtx-4090-typo,hand-edited\n")
    home = tmp_path / "warehouse"
    home.mkdir()
    reason = failed_dbt_build(home, tmp_path, ["hardware_aliases", "hardware_catalogue"], project=project)
    assert ("dbt fail in test.benchwh.relationships_hardware_aliases_hardware_id__hardware_id__ref_hardware_"
            in reason), reason
    assert "nvidia-rtx-4090-typo" in reason.split("failing rows: ", 1)[-1], reason


def test_a_key_test_fails_on_duplicated_rows(tmp_path):
    """unique_key (tests/generic/unique_key.sql) groups the rows on every engine and every build: the
    grid staging model's key (raw_sha256, area, year) passes on its landing, and fails, quoting a
    repeated key, once the same landing file is there twice. Real dbt builds of the grid models."""
    import shutil

    from ingest.sources.grid import GridSource
    from tests.helpers.dbt_build import dbt_build, failed_dbt_build

    home = tmp_path / "warehouse"
    folder = landed_entity(home, GridSource(), "intensity")
    held = tmp_path / "held"
    held.mkdir()
    dbt_build(home, held, ["+fct_grid_intensity"])
    landed = next(p for p in sorted(folder.glob("*.parquet")) if not p.name.startswith("_"))
    shutil.copyfile(landed, folder / "zz-the-same-rows-again.parquet")
    reason = failed_dbt_build(home, tmp_path / "twice", ["+fct_grid_intensity"])
    assert "dbt fail in test.benchwh.unique_key_stg_grid__intensities" in reason, reason
    assert re.search(r"failing rows: raw_sha256=[0-9a-f]+, area=[^,]+, year=\d+, n_rows=2", reason), reason

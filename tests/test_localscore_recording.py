"""The bundled offline recording of LocalScore: replays and lands cleanly, and is reproducible."""
from __future__ import annotations

import json

import duckdb

from ingest.landing import Lander
from ingest.raw_store import RawStore
from ingest.replay import recording_dir, replay_into_store
from ingest.sources.localscore import LocalScoreSource
from scripts.recordings.localscore import write_recording


def test_recording_replays_and_lands_forty_runs_with_nine_tests_each(tmp_path):
    store = RawStore(tmp_path / "raw")
    source = LocalScoreSource()
    added = replay_into_store("localscore", store, source.parser_version)
    assert all(e.url.startswith("https://www.localscore.ai/") for e in added)
    assert replay_into_store("localscore", store) == []  # replaying twice stores nothing new
    outcomes = Lander(tmp_path / "landing", store, log=lambda m: None).land_pending(source)
    assert {o.status for o in outcomes} == {"landed"}

    con = duckdb.connect()
    con.execute(f"CREATE VIEW runs AS SELECT * FROM read_parquet('{tmp_path}/landing/localscore/runs/*.parquet')")
    con.execute(f"CREATE VIEW tests AS SELECT * FROM read_parquet('{tmp_path}/landing/localscore/tests/*.parquet')")
    # the second API page lists the 35 runs of the first again: 75 rows, 40 runs
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (75, 40)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM tests").fetchone() == (360, 40)
    names = {r[0] for r in con.execute("SELECT DISTINCT accelerator_name FROM runs").fetchall()}
    assert {"NVIDIA GeForce RTX 4090", "NVIDIA  GeForce RTX 4090", "Apple M2 Max",
            "AMD Radeon RX 7900 XTX"} <= names
    assert any(r[1] == "CPU" for r in con.execute("SELECT DISTINCT accelerator_name, accelerator_type FROM runs").fetchall())
    # identical re-submissions: same machine and model, same test values, minutes apart
    twins = con.execute("""
        WITH r AS (SELECT DISTINCT run_id, created_at, accelerator_name, model_name FROM runs),
        sig AS (SELECT run_id, string_agg(test_name || gen_tps || prompt_tps, ',' ORDER BY test_index) s
                FROM tests GROUP BY run_id)
        SELECT count(*) FROM r a JOIN r b ON a.run_id < b.run_id
          AND a.accelerator_name = b.accelerator_name AND a.model_name = b.model_name
          AND b.created_at - a.created_at <= INTERVAL 30 MINUTE
        JOIN sig sa ON sa.run_id = a.run_id JOIN sig sb ON sb.run_id = b.run_id AND sa.s = sb.s
    """).fetchone()[0]
    assert twins >= 3


def test_recording_is_what_the_generator_writes(tmp_path):
    write_recording(tmp_path / "rec")
    committed = recording_dir("localscore")
    assert json.loads((tmp_path / "rec" / "index.json").read_text()) == json.loads((committed / "index.json").read_text())
    for rec in json.loads((committed / "index.json").read_text()):
        assert (tmp_path / "rec" / rec["file"]).read_bytes() == (committed / rec["file"]).read_bytes(), rec["file"]

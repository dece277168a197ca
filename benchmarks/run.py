"""Scale benchmark runner (DESIGN §8, issue 17).

    python -m benchmarks.run --scale 0.02 [--out FILE.json] [--work DIR] [--keep]

In one process tree and one run:
  generate          seeded raw inputs (benchmarks/generate.py) into a fresh BENCHWH_HOME
  land_full         every raw payload through the real ingest code (Lander.land_pending)
  dbt_parse         `dbt parse` into the home's dbt target folder (a new home's first build parses in full)
  dbt_full          the real dbt project, the stock `dbt build` with the env, path and flags the
                    orchestration uses, from dbt's own partial parse in that folder (unit tests
                    skipped unless BENCHWH_DBT_UNIT_TESTS=1)
  floor             benchmarks/floor.sql: fct_speed_summary by one hand-written DuckDB script
  publish_full      `benchwh refresh --no-fetch`: the real job builds and publishes the full warehouse
  add_incremental   new signed run files through `benchwh runs add` (ingest.sources.runs.add.add_paths)
  publish_incremental  `benchwh refresh --no-fetch` again: the increment built and published
  dbt_incremental   the bare dbt build again, into a new file
  startup           `benchwh refresh --offline` in a new home (the bundled recordings)
  noop              the same again: nothing new lands
Each phase is a child process; its peak RSS comes from wait4 (the largest process of its tree).
Prints a table, the ratios and each goal with PASS/MISS; writes everything as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = ".benchwh-bench"
# DESIGN §8 targets (at scale 1)
TARGET_SECONDS = 60.0
TARGET_MB = 2048.0
TARGET_FLOOR_RATIO = 2.0
# goals (docs/benchmarks.md): at scale 1, and at scale 10 where the data dominates dbt's fixed cost
GOAL_REPLAY_SECONDS = {1: 120.0, 10: 600.0}
GOAL_BUILD_SECONDS = 60.0  # scale 1
GOAL_BUILD_FLOOR_RATIO = {1: 2.0, 10: 1.3}
GOAL_NIGHTLY_SECONDS = 45.0
GOAL_NOOP_SECONDS = 10.0
GOAL_STARTUP_SECONDS = 30.0
GOAL_PHASE_MB = 2048.0
GOAL_RANGE_READ_SHARE = 0.05  # one model's rows of the largest release file, over HTTP ranges


class PhaseFailed(Exception):
    pass


def _bin(name: str) -> str:
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else name


def run_phase(name: str, cmd: list[str], env: dict, log: Path, cwd: Path = ROOT) -> dict:
    """Run one phase as a child; return seconds, peak MB and the JSON line it printed (if any)."""
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    peak_kb = usage.ru_maxrss
    text = log.read_text(encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        tail = " | ".join(line.strip() for line in text.strip().splitlines()[-3:])
        raise PhaseFailed(f"phase {name} failed (exit {proc.returncode}; log {log}): {tail[-400:]}")
    result = {}
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
                break
            except ValueError:
                pass
    return {"phase": name, "seconds": round(seconds, 2), "peak_mb": round(peak_kb / 1024, 1),
            "rows": result.get("rows"), "detail": result.get("detail", {}),
            "inner_seconds": result.get("seconds")}


def dbt_env(home: Path, env: dict, name: str) -> dict:
    """The environment the orchestration gives dbt (orchestration/dbt_assets.py): the home, the
    build's values in BENCHWH_BUILD_* (read while executing: they never void dbt's partial parse)."""
    from orchestration.dbt_assets import build_env, build_values
    from orchestration.manifest import DBT_NO_TRACKING

    values = build_values(f"bench-{name}", code_revision="bench")
    return {**{k: v for k, v in env.items() if k != "BENCHWH_BUILD_PATH"}, "BENCHWH_HOME": str(home),
            **build_env(values), **DBT_NO_TRACKING}


def dbt_cmd(verb: str, home: Path, work: Path) -> list[str]:
    """The stock dbt (through benchwh-dbt, as the orchestration runs it) in the home's target folder."""
    target = home / "build" / "dbt-target"
    return [_bin("benchwh-dbt"), verb, "--project-dir", str(ROOT / "dbt_project"), "--profiles-dir",
            str(ROOT / "dbt_project"), "--target-path", str(target), "--log-path", str(work / "logs")]


def parse_phase(home: Path, work: Path, env: dict) -> dict:
    """`dbt parse` into the home's target folder, as a new home's first build parses."""
    (home / "build").mkdir(parents=True, exist_ok=True)
    result = run_phase("dbt_parse", dbt_cmd("parse", home, work), dbt_env(home, env, "parse"),
                       work / "dbt_parse.log", cwd=ROOT / "dbt_project")
    manifest = json.loads((home / "build" / "dbt-target" / "manifest.json").read_text())
    result["rows"] = len(manifest.get("nodes", {}))
    return result


def dbt_phase(name: str, home: Path, work: Path, env: dict) -> dict:
    """`dbt build` as dbt_assets runs it: the home's build path and target folder, the build's values."""
    from orchestration.dbt_assets import move_build

    build = work / f"{name}.duckdb"
    target = home / "build" / "dbt-target"
    (home / "build").mkdir(parents=True, exist_ok=True)
    cmd = dbt_cmd("build", home, work) + ["--fail-fast"]
    if env.get("BENCHWH_DBT_UNIT_TESTS") != "1":
        # as orchestration/dbt_assets.py: refresh builds skip dbt unit tests (CI runs them)
        cmd += ["--exclude-resource-type", "unit_test"]
    result = run_phase(name, cmd, dbt_env(home, env, name), work / f"{name}.log", cwd=ROOT / "dbt_project")
    move_build(home / "build" / "building.duckdb", build)
    import duckdb

    con = duckdb.connect(str(build), read_only=True)
    try:
        summary = con.execute("select count(*) from marts.fct_speed_summary").fetchone()[0]
        measurements = con.execute("select count(*) from marts.fct_speed_measurements").fetchone()[0]
        prices = con.execute("select count(*) from marts.fct_api_prices").fetchone()[0]
    finally:
        con.close()
    result["rows"] = summary
    result["detail"] = {"fct_speed_measurements": measurements, "fct_api_prices": prices,
                        "build_file": str(build), **parse_profile(work / f"{name}.log"),
                        **node_profile(target)}
    return result


def parse_profile(log: Path) -> dict:
    """Did dbt parse the whole project? (its log says why when it cannot reuse the parse)"""
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    full = "Unable to do partial parsing" in text or "Starting full parse" in text
    return {"full_parse": full}


def refresh_phase(name: str, home: Path, work: Path, env: dict, *args: str) -> dict:
    """`benchwh` end to end (a child process): rows = fct_speed_summary of the published file."""
    result = run_phase(name, [_bin("benchwh"), *args], env, work / f"{name}.log")
    text = (work / f"{name}.log").read_text(encoding="utf-8", errors="replace")
    last = [line for line in text.splitlines() if line.strip()][-1:] or [""]
    import duckdb

    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        result["rows"] = con.execute("select count(*) from marts.fct_speed_summary").fetchone()[0]
        version = con.execute("select version from audit.build_info").fetchone()[0]
    finally:
        con.close()
    result["detail"] = {"published_version": version, "last_line": last[0][:300],
                        "build_skipped": "build skipped" in text}
    return result


def spark_dbt_phase(name: str, home: Path, work: Path, env: dict) -> dict:
    """The same `dbt build` on Spark local mode (`--target spark`, dbt-spark's session method), its
    tables then read into a DuckDB file as `benchwh refresh --engine spark` does (counted in the
    phase: it is part of a Spark refresh)."""
    from publish.spark_build import assemble_duckdb, spark_build_env

    build, target, spark = work / f"{name}.duckdb", work / f"{name}-target", work / f"{name}-warehouse"
    env = {**dbt_env(home, env, name), "BENCHWH_SPARK_WAREHOUSE": str(spark), **spark_build_env(home)}
    cmd = dbt_cmd("build", home, work)[:-4] + ["--target-path", str(target), "--log-path", str(work / "logs"),
                                             "--fail-fast", "--target", "spark", "--exclude-resource-type", "unit_test"]
    result = run_phase(name, cmd, env, work / f"{name}.log", cwd=ROOT / "dbt_project")
    t0 = time.perf_counter()
    rows = assemble_duckdb(spark, build, ROOT / "dbt_project" / "target" / "manifest.json")
    result["seconds"] = round(result["seconds"] + time.perf_counter() - t0, 2)
    result["rows"] = rows.get("marts.fct_speed_summary")
    result["detail"] = {"fct_speed_measurements": rows.get("marts.fct_speed_measurements"),
                        "fct_api_prices": rows.get("marts.fct_api_prices"), "build_file": str(build),
                        "tables": len(rows)}
    shutil.rmtree(spark, ignore_errors=True)
    return result


def node_profile(target: Path) -> dict:
    """From dbt's run_results and manifest: the slowest nodes and the time of fct_speed_summary's lineage."""
    try:
        results = json.loads((target / "run_results.json").read_text())["results"]
        manifest = json.loads((target / "manifest.json").read_text())
    except (OSError, ValueError, KeyError):
        return {}
    times = {r["unique_id"]: float(r.get("execution_time") or 0) for r in results}
    parents = manifest.get("parent_map", {})
    lineage, todo = set(), ["model.benchwh.fct_speed_summary"]
    while todo:
        node = todo.pop()
        if node in lineage:
            continue
        lineage.add(node)
        todo.extend(p for p in parents.get(node, []) if p.startswith(("model.", "seed.")))
    by_kind: dict[str, float] = {}
    for uid, t in times.items():
        kind = uid.split(".", 1)[0]
        by_kind[kind] = by_kind.get(kind, 0.0) + t
    slowest = sorted(times.items(), key=lambda kv: -kv[1])[:10]
    return {
        "nodes": len(times),
        "node_seconds_by_kind": {k: round(v, 2) for k, v in sorted(by_kind.items())},
        "speed_lineage_node_seconds": round(sum(times.get(n, 0.0) for n in lineage), 2),
        "slowest_nodes": [{"node": uid, "seconds": round(t, 2)} for uid, t in slowest],
    }


def compare_floor(pipeline_db: Path, floor_db: Path) -> dict:
    """Does the floor compute the same fct_speed_summary? (rows differing either way)"""
    import duckdb

    cols = ("hardware_id, model_id, quant, engine, config_id, test_profile, build_id, n_runs, n_samples, n_gen_samples, "
            "round(gen_tps_median, 6), round(gen_tps_ci_low, 6), round(gen_tps_ci_high, 6), interval_method, "
            "round(prompt_tps_median, 6), round(ttft_ms_median, 6), round(turn_time_ms_median, 6), "
            "rank_best, rank_worst, rank_of")
    con = duckdb.connect()
    try:
        con.execute(f"attach '{pipeline_db}' as p (read_only)")
        con.execute(f"attach '{floor_db}' as f (read_only)")
        only_p = con.execute(f"select count(*) from (select {cols} from p.marts.fct_speed_summary "
                             f"except all select {cols} from f.floor_speed_summary)").fetchone()[0]
        only_f = con.execute(f"select count(*) from (select {cols} from f.floor_speed_summary "
                             f"except all select {cols} from p.marts.fct_speed_summary)").fetchone()[0]
    finally:
        con.close()
    return {"rows_only_in_pipeline": only_p, "rows_only_in_floor": only_f, "equal": only_p == 0 and only_f == 0}


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    import duckdb
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb, "os": platform.platform(),
            "python": platform.python_version(), "duckdb": duckdb.__version__, "load_avg_at_start": load}


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def print_table(report: dict) -> None:
    print()
    print(f"{'phase':<22}{'seconds':>10}{'peak MB':>10}{'rows':>12}")
    for p in report["phases"]:
        rows = "" if p["rows"] is None else f"{p['rows']:,}"
        print(f"{p['phase']:<22}{p['seconds']:>10.1f}{p['peak_mb']:>10.0f}{rows:>12}")
    print()
    for key, value in report["ratios"].items():
        print(f"{key:<36}{value}")
    print(f"{'floor equals fct_speed_summary':<36}{report['floor_check']['equal']}")
    print()


def goals(report: dict) -> list[dict]:
    """Each goal (docs/benchmarks.md) with the figure this run measured and PASS/MISS. The goals are
    set at scale 1 and at scale 10; at another scale the nearest set is shown and the line says so."""
    ph = {p["phase"]: p for p in report["phases"]}
    scale = report["scale"]
    at = 10 if scale >= 5 else 1
    nightly = ph["add_incremental"]["seconds"] + ph["publish_incremental"]["seconds"]
    files = report.get("inputs", {}).get("incoming", {}).get("files")
    peak = max(ph.values(), key=lambda p: p["peak_mb"])
    rows = [
        ("replay", "land the raw store (s)", ph["land_full"]["seconds"], GOAL_REPLAY_SECONDS[at], True),
        ("build", "dbt build / floor", ratio(ph["dbt_full"]["seconds"], ph["floor"]["seconds"]),
         GOAL_BUILD_FLOOR_RATIO[at], True),
        ("memory", f"largest phase peak (MB, {peak['phase']})", peak["peak_mb"], GOAL_PHASE_MB, False),
    ]
    ranged = ph.get("range_read", {}).get("detail", {}).get("largest")
    if ranged:
        rows.append(("range read", f"one model's rows, page columns, {ph['range_read']['detail']['table']}",
                     ranged["page_columns"]["share_of_file"], GOAL_RANGE_READ_SHARE, True))
    if at == 1:
        rows[2:2] = [
            ("rebuild", "dbt build from landing (s)", ph["dbt_full"]["seconds"], GOAL_BUILD_SECONDS, True),
            ("nightly increment", f"{files} run files landed, built, published (s)", round(nightly, 2),
             GOAL_NIGHTLY_SECONDS, True),
            ("no-op refresh", "refresh --offline, nothing new (s)", ph["noop"]["seconds"], GOAL_NOOP_SECONDS, False),
            ("start-up", "first refresh --offline after install (s)", ph["startup"]["seconds"],
             GOAL_STARTUP_SECONDS, False),
        ]
    out = []
    for goal, measure, figure, limit, at_scale in rows:
        ok = figure is not None and (figure < limit if goal == "memory" else figure <= limit)
        out.append({"goal": goal, "measure": measure, "figure": figure,
                    "limit": ("< " if goal == "memory" else "<= ") + f"{limit:g}",
                    "result": "PASS" if ok else "MISS",
                    "note": f"goal set at scale {at}, measured at {scale:g}" if at_scale and scale != at else None})
    return out


def print_goals(report: dict) -> None:
    print(f"{'goal':<20}{'measure':<48}{'figure':>10}  {'limit':<9}result")
    for g in report["goals"]:
        figure = "-" if g["figure"] is None else f"{g['figure']:g}"
        print(f"{g['goal']:<20}{g['measure']:<48}{figure:>10}  {g['limit']:<9}{g['result']}"
              + (f"  ({g['note']})" if g["note"] else ""))
    print()


# From this scale on the bench builds with one dbt thread unless BENCHWH_DBT_THREADS says otherwise:
# at scale 10, fct_speed_runs and fct_speed_summary (window sorts of 10M samples) side by side ran
# out of the 1 GB limit, and each alone finishes in the same time (docs/benchmarks.md).
DATA_BOUND_SCALE = 5


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Scale benchmark (DESIGN §8): the real pipeline against a SQL floor.")
    ap.add_argument("--scale", type=float, default=0.02, help="1 = DESIGN §8 scale (100k runs, 1M measurements)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--incremental-files", type=int, default=1000, help="new run files added after the full build")
    ap.add_argument("--out", type=Path, default=None, help="JSON report (default warehouse/bench/bench-scale-S.json)")
    ap.add_argument("--work", type=Path, default=None, help="working folder (default a new folder under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the working folder (raw, landing, builds)")
    ap.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb",
                    help="spark: also build on Spark local mode (dbt-spark) and compare with the DuckDB build")
    args = ap.parse_args(argv)
    if not (0 < args.scale <= 10):
        print(f"benchmarks.run: --scale must be in (0, 10], got {args.scale}", file=sys.stderr)
        return 2
    from ingest import config

    if args.scale >= DATA_BOUND_SCALE and not os.environ.get(config.DBT_THREADS_ENV):
        # where data dominates, dbt nodes side by side share one memory limit for no gain in time
        os.environ[config.DBT_THREADS_ENV] = "1"
    try:  # every DuckDB phase and the floor run under it: a bad value fails here, not in a phase
        memory_limit = config.duckdb_memory_limit()
        dbt_threads = config.dbt_threads()
    except config.SettingError as exc:
        print(f"benchmarks.run: {exc}", file=sys.stderr)
        return 2
    out = args.out or ROOT / "warehouse" / "bench" / f"bench-scale-{args.scale:g}.json"
    if args.work is not None:
        work = args.work.resolve()
        if work.exists() and any(work.iterdir()):
            if not (work / MARKER).exists():
                print(f"benchmarks.run: {work} is not empty and not a benchmark folder", file=sys.stderr)
                return 2
            shutil.rmtree(work)
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix=f"benchwh-bench-{args.scale:g}-"))
    (work / MARKER).touch()
    home, incoming = work / "home", work / "incoming"
    # the refresh phases keep their Dagster instance in their own home
    env = {**{k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}, "BENCHWH_HOME": str(home)}
    py = sys.executable
    report: dict = {"scale": args.scale, "seed": args.seed,
                    "dbt_unit_tests": env.get("BENCHWH_DBT_UNIT_TESTS") == "1",
                    "duckdb_memory_limit": memory_limit, "dbt_threads": dbt_threads,
                    "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "machine": machine(), "work": str(work), "phases": []}
    print(f"benchmark at scale {args.scale:g} in {work} (DuckDB memory limit {memory_limit}, "
          f"dbt threads {dbt_threads})", flush=True)
    try:
        gen = run_phase("generate", [py, "-m", "benchmarks.generate", "--scale", str(args.scale),
                                     "--seed", str(args.seed), "--home", str(home),
                                     "--incremental-files", str(args.incremental_files), "--incoming", str(incoming)],
                        env, work / "generate.log")
        report["inputs"] = gen["detail"]
        report["phases"].append(gen)
        offline_home = work / "offline-home"
        offline_env = {**env, "BENCHWH_HOME": str(offline_home)}
        steps = [
            ("land_full", lambda: run_phase("land_full", [py, "-m", "benchmarks.phases", "land", "--home", str(home)],
                                            env, work / "land_full.log")),
            ("dbt_parse", lambda: parse_phase(home, work, env)),
            ("dbt_full", lambda: dbt_phase("dbt_full", home, work, env)),
            ("floor", lambda: run_phase("floor", [py, "-m", "benchmarks.phases", "floor", "--home", str(home),
                                                  "--out", str(work / "floor.duckdb")], env, work / "floor.log")),
            ("publish_full", lambda: refresh_phase("publish_full", home, work, env, "refresh", "--no-fetch")),
            ("add_incremental", lambda: run_phase("add_incremental", [py, "-m", "benchmarks.phases", "add", "--home",
                                                                      str(home), "--incoming", str(incoming)],
                                                  env, work / "add_incremental.log")),
            ("publish_incremental", lambda: refresh_phase("publish_incremental", home, work, env,
                                                          "refresh", "--no-fetch")),
            ("range_read", lambda: run_phase("range_read", [py, "-m", "benchmarks.range_read", "--exports",
                                                            str(home / "exports")], env, work / "range_read.log")),
            ("dbt_incremental", lambda: dbt_phase("dbt_incremental", home, work, env)),
            ("startup", lambda: refresh_phase("startup", offline_home, work, offline_env, "refresh", "--offline")),
            ("noop", lambda: refresh_phase("noop", offline_home, work, offline_env, "refresh", "--offline")),
        ]
        if args.engine == "spark":  # after the DuckDB build of the same landing
            steps.insert(2, ("dbt_full_spark", lambda: spark_dbt_phase("dbt_full_spark", home, work, env)))
        for name, step in steps:
            print(f"  {name} ...", flush=True)
            result = step()
            report["phases"].append(result)
            print(f"  {name}: {result['seconds']:.1f} s, {result['peak_mb']:.0f} MB", flush=True)
            if name == "floor":
                report["floor_check"] = compare_floor(work / "dbt_full.duckdb", work / "floor.duckdb")
    except PhaseFailed as exc:
        print(f"benchmarks.run: {exc}", file=sys.stderr)
        return 1
    ph = {p["phase"]: p for p in report["phases"]}
    land, dbt, floor = ph["land_full"]["seconds"], ph["dbt_full"]["seconds"], ph["floor"]["seconds"]
    add, dbt_inc = ph["add_incremental"]["seconds"], ph["dbt_incremental"]["seconds"]
    lineage = ph["dbt_full"]["detail"].get("speed_lineage_node_seconds")
    report["ratios"] = {
        "pipeline/floor (dbt build)": ratio(dbt, floor),
        "speed lineage/floor (dbt nodes)": ratio(lineage, floor),
        "incremental/full (land+build)": ratio(add + dbt_inc, land + dbt),
        "incremental/full (landing only)": ratio(add, land),
        "incremental/full (build only)": ratio(dbt_inc, dbt),
    }
    if "dbt_full_spark" in ph:
        report["ratios"]["spark/duckdb (dbt build)"] = ratio(ph["dbt_full_spark"]["seconds"], dbt)
        report["spark_rows_match"] = ph["dbt_full_spark"]["rows"] == ph["dbt_full"]["rows"]
    inputs = report.get("inputs", {})
    files_full = inputs.get("runs", {}).get("files")
    files_new = inputs.get("incoming", {}).get("files")
    report["ratios"]["new files/landed payloads"] = ratio(
        files_new, sum(v.get("payloads", 0) for v in ph["land_full"]["detail"].values()))
    report["targets_at_this_scale"] = {
        "full rebuild under 60 s": dbt < TARGET_SECONDS,
        "full rebuild under 2 GB": ph["dbt_full"]["peak_mb"] < TARGET_MB,
        "within 2x of the floor": (ratio(dbt, floor) or 99) <= TARGET_FLOOR_RATIO,
        "run files landed before the increment": files_full,
    }
    report["goals"] = goals(report)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print_table(report)
    print_goals(report)
    print(f"report: {out}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Scale benchmark runner (DESIGN §8, issue 17).

    python -m benchmarks.run --scale 0.02 [--out FILE.json] [--work DIR] [--keep]

In one process tree and one run:
  generate          seeded raw inputs (benchmarks/generate.py) into a fresh BENCHWH_HOME
  land_full         every raw payload through the real ingest code (Lander.land_pending)
  dbt_parse         `dbt parse` into the home's dbt-state/ (once per code revision, as a refresh keeps it)
  dbt_full          the real dbt project, `dbt build` with the env, path and flags the orchestration
                    uses, starting from that parse (unit tests skipped unless BENCHWH_DBT_UNIT_TESTS=1),
                    forked from the warm dbt server as a refresh's build is (the server's start-up,
                    which a refresh overlaps with its fetch and landing, is timed apart)
  floor             benchmarks/floor.sql: fct_speed_summary by one hand-written DuckDB script
  publish_full      `benchwh refresh --no-fetch`: the real job builds and publishes the full warehouse
  add_incremental   new signed run files through `benchwh runs add` (ingest.sources.runs.add.add_paths)
  publish_incremental  `benchwh refresh --no-fetch` again: the increment built and published
  dbt_incremental   the bare dbt build again, into a new file
  startup           `benchwh refresh --offline` in a new home (the bundled recordings)
  noop              the same again: nothing new lands
Each phase is a child process; its peak RSS comes from wait4 (the largest process of its tree) and,
for a build forked from the warm dbt server (no child of the phase), from that process's VmHWM.
dbt and the refreshes run as a nightly refresh does: each refresh starts its dbt server as it
begins, and no server outlives its phase; `--cold` runs every dbt in its own process, `--warm`
lets everything fork from servers that stay up (as the tests do).
Prints a table, the ratios and each goal of issue 17 with PASS/MISS; writes everything as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = ".benchwh-bench"
# DESIGN §8 targets (at scale 1)
TARGET_SECONDS = 60.0
TARGET_MB = 2048.0
TARGET_FLOOR_RATIO = 2.0
# issue 17 goals (at scale 1 for replay, build and nightly increment)
GOAL_REPLAY_SECONDS = 120.0
GOAL_BUILD_FLOOR_RATIO = 1.5
GOAL_NIGHTLY_SECONDS = 45.0
GOAL_NOOP_SECONDS = 10.0
GOAL_STARTUP_SECONDS = 30.0
GOAL_PHASE_MB = 2048.0


class PhaseFailed(Exception):
    pass


def _bin(name: str) -> str:
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else name


class BuildPeak(threading.Thread):
    """The peak RSS of the process a build's pid file names (cli/dbt_guard.py writes it in the
    process that runs dbt): a build forked from the warm dbt server is no child of its phase, so
    wait4 does not see it. Sampled every 50 ms from /proc (VmHWM: the peak so far)."""

    def __init__(self, pid_file: Path) -> None:
        super().__init__(daemon=True)
        self.pid_file, self.peak_kb, self.child_pid = pid_file, 0, None
        self.pids: dict[int, bool] = {}  # each pid the file named: is it the phase's or its descendant?
        self._done = threading.Event()
        pid_file.unlink(missing_ok=True)  # a finished build's, naming another process

    def run(self) -> None:
        while not self._done.wait(0.05):
            self.sample()

    def sample(self) -> None:
        try:
            pid = int(self.pid_file.read_text())
            status = Path(f"/proc/{pid}/status").read_text()
        except (OSError, ValueError):
            return
        if pid not in self.pids:
            self.pids[pid] = _descends_from(pid, self.child_pid)
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                self.peak_kb = max(self.peak_kb, int(line.split()[1]))

    def finish(self) -> int:
        self._done.set()
        self.join()
        return self.peak_kb

    @property
    def forked(self) -> bool:
        """Did dbt run outside the phase's process tree (in a warm server's worker)?"""
        return any(not descends for descends in self.pids.values())


def _descends_from(pid: int, ancestor: int | None) -> bool:
    """Is `pid` the process `ancestor` or one of its descendants (by /proc's parent pids)?"""
    while ancestor is not None and pid > 1:
        if pid == ancestor:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
    return False


def run_phase(name: str, cmd: list[str], env: dict, log: Path, cwd: Path = ROOT,
              build_peak: BuildPeak | None = None) -> dict:
    """Run one phase as a child; return seconds, peak MB and the JSON line it printed (if any)."""
    started = time.perf_counter()
    if build_peak is not None:
        build_peak.start()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        if build_peak is not None:
            build_peak.child_pid = proc.pid
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    peak_kb = max(usage.ru_maxrss, build_peak.finish() if build_peak is not None else 0)
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
    """The environment the orchestration gives dbt (orchestration/dbt_state.py): the home's stable
    build path, the build's values in BENCHWH_BUILD_* (not `--vars`: they would void the parse)."""
    from orchestration.dbt_state import BUILDING_IN_HOME, DBT_BUILD_ENV, build_env, build_values

    values = build_values(f"bench-{name}", code_revision="bench")
    return {**env, **build_env(values), "BENCHWH_BUILD_PATH": BUILDING_IN_HOME, **DBT_BUILD_ENV}


def dbt_cmd(verb: str, target: Path, work: Path) -> list[str]:
    # through benchwh-dbt, as the orchestration runs its builds and parses (cli/dbt_guard.py)
    return [_bin("benchwh-dbt"), verb, "--project-dir", str(ROOT / "dbt_project"), "--profiles-dir",
            str(ROOT / "dbt_project"), "--target-path", str(target), "--log-path", str(work / "logs")]


def parse_phase(home: Path, work: Path, env: dict) -> dict:
    """`dbt parse` into the home's dbt-state/, as the first build of a home leaves it."""
    from orchestration.dbt_state import mark_parse

    state = home / "dbt-state"
    result = run_phase("dbt_parse", dbt_cmd("parse", state, work), dbt_env(home, env, "parse"),
                       work / "dbt_parse.log", cwd=home)
    mark_parse(state)  # made in this checkout: the builds start from it
    manifest = json.loads((state / "manifest.json").read_text())
    result["rows"] = len(manifest.get("nodes", {}))
    return result


def stop_dbt_servers(work: Path) -> int:
    """Stop the warm dbt servers this benchmark's phases started (their command line names its
    process cache, under `work`): none outlives its phase, as none is alive when a nightly
    refresh begins. The number stopped."""
    marker = str(work).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"cli.dbt_server" in cmdline and marker in cmdline:
            pids.append(int(entry.name))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    from publish.verify import pid_alive

    deadline = time.monotonic() + 10
    waiting = list(pids)
    while waiting and time.monotonic() < deadline:
        time.sleep(0.05)
        waiting = [pid for pid in waiting if pid_alive(pid)]
    return len(pids)


def build_peak(home: Path) -> BuildPeak:
    from orchestration.dbt_state import BUILDING_IN_HOME

    return BuildPeak(home / f"{BUILDING_IN_HOME}.pid")


def dbt_phase(name: str, home: Path, work: Path, env: dict, starts: str = "cold") -> dict:
    """`dbt build` as dbt_assets runs it: the home's build path and parse state, the build's values.
    Unless `starts` is "cold", forked from the warm dbt server, started first (and timed apart) as a
    refresh starts it while it fetches and lands; "nightly" stops it after the build."""
    from orchestration.dbt_state import BUILDING_IN_HOME, move_build, reuse_parse

    build = work / f"{name}.duckdb"
    target = work / f"{name}-target"
    reused = reuse_parse(target, home / "dbt-state")
    (home / "build").mkdir(parents=True, exist_ok=True)
    cmd = dbt_cmd("build", target, work) + ["--fail-fast"]
    if env.get("BENCHWH_DBT_UNIT_TESTS") != "1":
        # as orchestration/dbt_assets.py: refresh builds skip dbt unit tests (CI runs them)
        cmd += ["--exclude-resource-type", "unit_test"]
    build_env = dbt_env(home, env, name)
    server_seconds = None
    if starts != "cold":
        server = run_phase(f"{name}_dbt_server", [sys.executable, "-m", "benchmarks.phases", "dbt-server",
                                                  "--home", str(home)],
                           build_env, work / f"{name}_dbt_server.log")
        server_seconds = server["seconds"]
    peak = build_peak(home)
    try:
        result = run_phase(name, cmd, build_env, work / f"{name}.log", cwd=home,  # dbt runs in the home
                           build_peak=peak)
    finally:
        if starts == "nightly":
            stop_dbt_servers(work)
    move_build(home / BUILDING_IN_HOME, build)
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
                        "build_file": str(build), "parse_reused": reused, **parse_profile(work / f"{name}.log"),
                        "forked": peak.forked, "dbt_server_start_seconds": server_seconds,
                        **node_profile(target, home / "dbt-state")}
    return result


def parse_profile(log: Path) -> dict:
    """Did dbt parse the whole project? (its log says why when it cannot reuse the parse)"""
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    full = "Unable to do partial parsing" in text or "Starting full parse" in text
    return {"full_parse": full}


def refresh_phase(name: str, home: Path, work: Path, env: dict, *args: str, starts: str = "cold") -> dict:
    """`benchwh` end to end (a child process): rows = fct_speed_summary of the published file. The
    refresh starts its own dbt server unless servers are off; "nightly" stops it after the phase."""
    peak = build_peak(home)
    try:
        result = run_phase(name, [_bin("benchwh"), *args], env, work / f"{name}.log", build_peak=peak)
    finally:
        if starts == "nightly":
            stop_dbt_servers(work)
    text = (work / f"{name}.log").read_text(encoding="utf-8", errors="replace")
    last = [line for line in text.splitlines() if line.strip()][-1:] or [""]
    import duckdb

    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        result["rows"] = con.execute("select count(*) from marts.fct_speed_summary").fetchone()[0]
        version = con.execute("select version from audit.build_info").fetchone()[0]
    finally:
        con.close()
    # forked: the refresh's build ran in a worker of a warm dbt server (none when it was skipped)
    result["detail"] = {"published_version": version, "last_line": last[0][:300],
                        "build_skipped": "build skipped" in text, "dbt_forked": peak.forked}
    return result


def spark_dbt_phase(name: str, home: Path, work: Path, env: dict) -> dict:
    """The same `dbt build` on Spark local mode (`--target spark`, dbt-spark's session method), its
    tables then read into a DuckDB file as `benchwh refresh --engine spark` does (counted in the
    phase: it is part of a Spark refresh)."""
    from publish.spark_build import assemble_duckdb, spark_build_env

    build, target, spark = work / f"{name}.duckdb", work / f"{name}-target", work / f"{name}-warehouse"
    env = {**dbt_env(home, env, name), "BENCHWH_SPARK_WAREHOUSE": str(spark), **spark_build_env(home)}
    cmd = dbt_cmd("build", target, work) + ["--fail-fast", "--target", "spark", "--exclude-resource-type", "unit_test"]
    result = run_phase(name, cmd, env, work / f"{name}.log", cwd=home)
    t0 = time.perf_counter()
    rows = assemble_duckdb(spark, build, ROOT / "dbt_project" / "target" / "manifest.json")
    result["seconds"] = round(result["seconds"] + time.perf_counter() - t0, 2)
    result["rows"] = rows.get("marts.fct_speed_summary")
    result["detail"] = {"fct_speed_measurements": rows.get("marts.fct_speed_measurements"),
                        "fct_api_prices": rows.get("marts.fct_api_prices"), "build_file": str(build),
                        "tables": len(rows)}
    shutil.rmtree(spark, ignore_errors=True)
    return result


def node_profile(target: Path, parse_state: Path) -> dict:
    """From dbt's run_results and the parse's manifest (a build writes none: DBT_BUILD_ENV): the
    slowest nodes and the time of fct_speed_summary's lineage."""
    try:
        results = json.loads((target / "run_results.json").read_text())["results"]
        manifest = json.loads((parse_state / "manifest.json").read_text())
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

    cols = ("hardware_id, model_id, quant, engine, test_profile, build_id, n_runs, n_samples, n_gen_samples, "
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
    for p in report["phases"]:
        detail = p.get("detail") or {}
        if detail.get("dbt_server_start_seconds") is not None:
            how = "forked from" if detail.get("forked") else "ran beside (not forked from)"
            print(f"{p['phase']} {how} the warm dbt server, started {detail['dbt_server_start_seconds']:.1f} s "
                  "before it (as a refresh starts it while it fetches and lands)")
    for key, value in report["ratios"].items():
        print(f"{key:<36}{value}")
    print(f"{'floor equals fct_speed_summary':<36}{report['floor_check']['equal']}")
    print()


WARM_NOTE = "dbt and benchwh forked from their warm servers"
START_NOTES = {"warm": WARM_NOTE, "cold": "every dbt in its own process, no warm dbt server"}


def goals(report: dict) -> list[dict]:
    """Each goal of issue 17 with the figure this run measured and PASS/MISS (replay, build and
    nightly increment are set for scale 1: at another scale the line says so)."""
    ph = {p["phase"]: p for p in report["phases"]}
    scale = report["scale"]
    nightly = ph["add_incremental"]["seconds"] + ph["publish_incremental"]["seconds"]
    files = report.get("inputs", {}).get("incoming", {}).get("files")
    peak = max(ph.values(), key=lambda p: p["peak_mb"])
    rows = [
        ("replay", "land the raw store (s)", ph["land_full"]["seconds"], GOAL_REPLAY_SECONDS, True),
        ("build", "dbt build / floor", ratio(ph["dbt_full"]["seconds"], ph["floor"]["seconds"]),
         GOAL_BUILD_FLOOR_RATIO, True),
        ("nightly increment", f"{files} run files landed, built, published (s)", round(nightly, 2),
         GOAL_NIGHTLY_SECONDS, True),
        ("no-op refresh", "refresh --offline, nothing new (s)", ph["noop"]["seconds"], GOAL_NOOP_SECONDS, False),
        ("start-up", "first refresh --offline after install (s)", ph["startup"]["seconds"],
         GOAL_STARTUP_SECONDS, False),
        ("memory", f"largest phase peak (MB, {peak['phase']})", peak["peak_mb"], GOAL_PHASE_MB, False),
    ]
    starts = report.get("starts") or ("warm" if report.get("warm") else "nightly")
    warm = [START_NOTES[starts]] if starts in START_NOTES else []
    out = []
    for goal, measure, figure, limit, at_scale_1 in rows:
        ok = figure is not None and (figure < limit if goal == "memory" else figure <= limit)
        out.append({"goal": goal, "measure": measure, "figure": figure,
                    "limit": ("< " if goal == "memory" else "<= ") + f"{limit:g}",
                    "result": "PASS" if ok else "MISS",
                    "note": "; ".join(([f"goal set at scale 1, measured at {scale:g}"]
                                       if at_scale_1 and scale != 1 else []) + warm) or None})
    return out


def print_goals(report: dict) -> None:
    print(f"{'issue 17 goal':<20}{'measure':<48}{'figure':>10}  {'limit':<9}result")
    for g in report["goals"]:
        figure = "-" if g["figure"] is None else f"{g['figure']:g}"
        print(f"{g['goal']:<20}{g['measure']:<48}{figure:>10}  {g['limit']:<9}{g['result']}"
              + (f"  ({g['note']})" if g["note"] else ""))
    print()


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
    starts = ap.add_mutually_exclusive_group()
    starts.add_argument("--warm", action="store_true",
                        help="let dbt and benchwh fork from warm servers that stay up (cli/dbt_server.py), as the "
                             "tests do; the goals are measured as a nightly refresh starts")
    starts.add_argument("--cold", action="store_true",
                        help="run every dbt in its own process, with no warm dbt server (the builds import dbt)")
    args = ap.parse_args(argv)
    if not (0 < args.scale <= 10):
        print(f"benchmarks.run: --scale must be in (0, 10], got {args.scale}", file=sys.stderr)
        return 2
    from ingest import config

    try:  # every DuckDB phase and the floor run under it: a bad value fails here, not in a phase
        memory_limit = config.duckdb_memory_limit()
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
    # as a nightly refresh starts (cli/dbt_server.py): `benchwh` in its own process, dbt forked
    # from the server each refresh starts as it begins, none alive before; --warm: everything
    # forks from servers that stay up; --cold: no dbt server
    starts_as = "warm" if args.warm else "cold" if args.cold else "nightly"
    # no PYTHONPATH of its own: `python -m benchmarks.*` runs in the checkout, and a PYTHONPATH
    # would name other warm servers than the ones `benchwh` and benchwh-dbt use without it
    env = {**{k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}, "BENCHWH_HOME": str(home),
           "BENCHWH_DBT_SERVER": "0" if args.cold else "1",
           "BENCHWH_CLI_SERVER": "1" if args.warm else "0"}
    if starts_as == "nightly":  # this run's own servers: their command line names it (stop_dbt_servers)
        env["BENCHWH_DBT_CACHE"] = str(work / "dbt-process-cache")
    # the parse runs in its own process (in a refresh it overlaps the server's start-up)
    parse_env = env if args.warm else {**env, "BENCHWH_DBT_SERVER": "0"}
    py = sys.executable
    report: dict = {"scale": args.scale, "seed": args.seed,
                    "dbt_unit_tests": env.get("BENCHWH_DBT_UNIT_TESTS") == "1",
                    "warm": args.warm, "starts": starts_as,
                    "duckdb_memory_limit": memory_limit,
                    "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "machine": machine(), "work": str(work), "phases": []}
    print(f"benchmark at scale {args.scale:g} in {work} (DuckDB memory limit {memory_limit}"
          + (f"; {START_NOTES[starts_as]}: not how a nightly refresh starts" if starts_as != "nightly" else "")
          + ")", flush=True)
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
            ("dbt_parse", lambda: parse_phase(home, work, parse_env)),
            ("dbt_full", lambda: dbt_phase("dbt_full", home, work, env, starts_as)),
            ("floor", lambda: run_phase("floor", [py, "-m", "benchmarks.phases", "floor", "--home", str(home),
                                                  "--out", str(work / "floor.duckdb")], env, work / "floor.log")),
            ("publish_full", lambda: refresh_phase("publish_full", home, work, env, "refresh", "--no-fetch",
                                                   starts=starts_as)),
            ("add_incremental", lambda: run_phase("add_incremental", [py, "-m", "benchmarks.phases", "add", "--home",
                                                                      str(home), "--incoming", str(incoming)],
                                                  env, work / "add_incremental.log")),
            ("publish_incremental", lambda: refresh_phase("publish_incremental", home, work, env,
                                                          "refresh", "--no-fetch", starts=starts_as)),
            ("dbt_incremental", lambda: dbt_phase("dbt_incremental", home, work, env, starts_as)),
            ("startup", lambda: refresh_phase("startup", offline_home, work, offline_env, "refresh", "--offline",
                                              starts=starts_as)),
            ("noop", lambda: refresh_phase("noop", offline_home, work, offline_env, "refresh", "--offline",
                                           starts=starts_as)),
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

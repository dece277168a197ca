"""Landing fans out (issue 18): under Dagster's multiprocess executor two sources land side by side,
and the ledger is the one a serial (in-process) run writes.

Two test sources, registered through the `benchwh.sources` entry point group (a dist-info folder on
PYTHONPATH), fetch from a loopback server that holds each answer until both sources have asked: in
a multiprocess run the two landing steps must overlap (seen in the Dagster event log: each step's
STEP_START comes before the other's STEP_SUCCESS); a serial run gets its answers at once. Before
that, in the same process, every built-in source lands the offline snapshot in the same run mode.
A multiprocess run killed mid-fetch leaves no step process behind.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers.loopback import LoopbackServer, Reply
from tests.helpers.pipeline import benchwh_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SLOW = ("slow_a", "slow_b")

SOURCE_MODULE = '''
import json

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from ingest.source import Entity, Source


class ItemSchema(pa.DataFrameModel):
    item: Series[str] = pa.Field(description="item name")
    value: Series[float] = pa.Field(ge=0, description="a value")


class _Slow(Source):
    kind = "snapshot"
    license = "CC0 (test data)"
    attribution = "benchwh tests"
    freshness_warn_hours = 24 * 365
    freshness_error_hours = 24 * 3650
    entities = (Entity("items", ItemSchema, "one row per item"),)

    def fetch(self, ctx):
        ctx.get(f"{self.base_url()}/items", ext="json")

    def parse(self, body, entry):
        return {"items": pd.DataFrame(json.loads(body)["items"], columns=["item", "value"])}


class SlowA(_Slow):
    name = "slow_a"
    default_url = "http://127.0.0.1:9/unset"


class SlowB(_Slow):
    name = "slow_b"
    default_url = "http://127.0.0.1:9/unset"
'''

DRIVER = '''
import json, os, sys
from dagster import DagsterEventType, DagsterInstance
from ingest.source import load_sources
from orchestration.checks import landing_key
from orchestration.execution import execute_refresh
from orchestration.instance import ensure_dagster_home
from orchestration.tags import fetch_tags

executor, urls, modes = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:] or ["offline", "live"]
ensure_dagster_home()
sources = load_sources()
wanted = (DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS)
for mode in modes:
    if mode == "offline":  # every source's landing, on the bundled recordings
        tags, names = fetch_tags(None, True), sorted(sources)
    else:  # the two slow sources, fetched from the loopback server named only now
        os.environ.update(urls)
        tags, names = fetch_tags(["slow_a", "slow_b"], False), ["slow_a", "slow_b"]
    keys = [landing_key(n, e.name) for n in names for e in sources[n].entities]
    with DagsterInstance.get() as instance, execute_refresh(instance, tags, executor, 2, keys) as result:
        logs = instance.all_logs(result.run_id)
        steps = [(r.step_key, r.dagster_event_type.value, r.timestamp)
                 for r in logs if r.is_dagster_event and r.dagster_event_type in wanted]
        failures = [r.dagster_event.event_specific_data.error.to_string() for r in logs
                    if r.is_dagster_event and r.dagster_event_type == DagsterEventType.STEP_FAILURE]
        print(json.dumps({"mode": mode, "success": result.success, "steps": steps, "failures": failures}))
'''


def register_sources(site: Path) -> None:
    """The two slow sources as an installed distribution: module + dist-info with entry points."""
    site.mkdir(parents=True)
    (site / "benchwh_slow_sources.py").write_text(SOURCE_MODULE)
    info = site / "benchwh_slow_sources-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: benchwh-slow-sources\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[benchwh.sources]\nslow_a = benchwh_slow_sources:SlowA\nslow_b = benchwh_slow_sources:SlowB\n")


class MeetingServer(LoopbackServer):
    """Answers `/a/items` and `/b/items`; with a barrier, neither answers before both were asked."""

    def __init__(self):
        super().__init__()
        self.barrier = None
        self.asked: set[str] = set()  # as each request arrives (self.requests logs it once answered)
        for name in ("a", "b"):
            self.route(f"/{name}/items", self._answer(name))

    def _answer(self, name: str):
        def handler(req):
            self.asked.add(req.path)
            if self.barrier is not None:
                try:
                    self.barrier.wait()
                except threading.BrokenBarrierError:
                    return Reply(503, b"the other source never asked")
            body = {"items": [{"item": f"{name}-{i}", "value": i * 1.5} for i in range(50)]}
            return Reply(200, json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        return handler


def driver(home: Path, site: Path, server: MeetingServer, executor: str, *modes: str) -> tuple[list[str], dict]:
    """The DRIVER's command line and environment: the slow sources registered, the server's URLs
    handed over for the live run only."""
    env = benchwh_env(home, DAGSTER_HOME=str(home / "dagster"),
                      PYTHONPATH=f"{site}{os.pathsep}{PROJECT_ROOT}")
    urls = {"BENCHWH_SLOW_A_URL": f"{server.url}/a", "BENCHWH_SLOW_B_URL": f"{server.url}/b"}
    return [sys.executable, "-c", DRIVER, executor, json.dumps(urls), *modes], env


def run(home: Path, site: Path, executor: str, server: MeetingServer) -> dict[str, dict]:
    """The offline run, then the live one, in one process: the live run's steps see the source URLs
    set after the first run's steps were started."""
    cmd, env = driver(home, site, server, executor)
    proc = subprocess.run(cmd, env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outs = {o["mode"]: o for o in map(json.loads, proc.stdout.strip().splitlines()[-2:])}
    for out in outs.values():
        assert out["success"], "\n".join(out["failures"])[-3000:] + proc.stderr[-2000:]
    return outs


def ledger(home: Path, live: tuple[str, ...]) -> dict[str, object]:
    """Every ledger file's content; for the live-fetched sources with the fetch times left out
    (and the hashes of the landing files, whose rows carry them)."""
    out = {}
    for path in sorted((home / "landing").glob("*/_ledger/*")):
        source = path.parent.parent.name
        rel = str(path.relative_to(home / "landing"))
        if source not in live:
            out[rel] = path.read_bytes()
            continue
        docs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for doc in docs:
            doc.pop("fetched_at")
            doc["files"] = sorted(doc["files"])
        out[rel] = docs
    return out


def landing_names(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home / "landing")) for p in (home / "landing").rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("fanout")
    site = root / "site"
    register_sources(site)
    out = {}
    with MeetingServer() as server:  # one server: both runs fetch the same URLs
        for executor, meet in (("multiprocess", True), ("in_process", False)):
            home = root / executor
            # the offline run fetches nothing: the barrier waits for the live run's two steps
            server.barrier = threading.Barrier(2, timeout=300) if meet else None
            outs = run(home, site, executor, server)
            out[executor] = (home, outs["offline"], outs["live"])
    return out


def test_two_landing_steps_overlap_under_the_multiprocess_executor(runs):
    _, _, live = runs["multiprocess"]
    times = {(step, kind): at for step, kind, at in live["steps"]}
    a_start, a_end = times[("land_slow_a", "STEP_START")], times[("land_slow_a", "STEP_SUCCESS")]
    b_start, b_end = times[("land_slow_b", "STEP_START")], times[("land_slow_b", "STEP_SUCCESS")]
    assert a_start < b_end and b_start < a_end, live["steps"]


def test_the_offline_snapshot_lands_under_the_multiprocess_executor(runs):
    _, offline, _ = runs["multiprocess"]
    started = {step for step, kind, _ in offline["steps"] if kind == "STEP_START"}
    assert {"land_localscore", "land_openrouter", "land_huggingface", "land_grid", "land_runs"} <= started


def test_the_ledger_equals_a_serial_runs(runs):
    parallel, serial = runs["multiprocess"][0], runs["in_process"][0]
    assert landing_names(parallel) == landing_names(serial)
    got, want = ledger(parallel, SLOW), ledger(serial, SLOW)
    assert sorted(got) == sorted(want)
    assert {k for k in got if k.split("/")[0] in SLOW}, "the slow sources landed nothing"
    for name in want:
        assert got[name] == want[name], name
    for source in ("localscore", "openrouter", "huggingface", "grid", "runs"):
        raw = [(home / "raw" / source / "manifest.jsonl").read_bytes() for home in (parallel, serial)]
        assert raw[0] == raw[1], source


def _processes_of_run(run_pid: int) -> set[int]:
    """Processes started for a run: BENCHWH_RUN_PID=<run_pid> in their environment, still alive."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == run_pid:
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"BENCHWH_RUN_PID={run_pid}".encode() in environ and state != "Z":
            found.add(int(entry.name))
    return found


def test_killing_a_multiprocess_run_takes_its_step_processes_with_it(tmp_path):
    """SIGKILL the process running the job while both landing steps wait on the network: the steps
    and whatever they started end."""
    import signal
    import time

    site = tmp_path / "site"
    register_sources(site)
    home = tmp_path / "home"
    with MeetingServer() as server:
        server.barrier = threading.Barrier(3, timeout=120)  # never complete: the steps wait
        cmd, env = driver(home, site, server, "multiprocess", "live")
        run = subprocess.Popen(cmd, env=env, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while server.asked != {"/a/items", "/b/items"}:
                assert run.poll() is None, run.stderr.read().decode()[-3000:]
                assert time.monotonic() < deadline, "the two steps never fetched"
                time.sleep(0.1)
            children = _processes_of_run(run.pid)
            assert len(children) >= 2, children  # the two steps
            run.send_signal(signal.SIGKILL)
            run.wait(timeout=30)
            deadline = time.monotonic() + 30
            while _processes_of_run(run.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not _processes_of_run(run.pid), "step processes outlived the run"
        finally:
            server.barrier.abort()
            if run.poll() is None:
                run.kill()
            run.stderr.close()

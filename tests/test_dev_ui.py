"""`make dev`'s command (`benchwh dev`) serves the CLI's own Dagster instance.

A CLI refresh made while the UI runs shows up in the UI (read through Dagster's GraphQL API),
with the same instance settings (the refresh run queue limit), and Ctrl-C stops the whole thing.
"""
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import requests

from tests.helpers.pipeline import BENCHWH, benchwh_env, run_benchwh
from publish.publish import read_version

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(url: str, query: str, variables: dict | None = None) -> dict:
    answer = requests.post(f"{url}/graphql", json={"query": query, "variables": variables or {}}, timeout=30)
    answer.raise_for_status()
    body = answer.json()
    assert "errors" not in body, body
    return body["data"]


def wait_for_ui(url: str, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "benchwh dev exited before serving"
        try:
            if graphql(url, "{ version }")["version"]:
                return
        except (requests.RequestException, AssertionError, ValueError):
            time.sleep(1)
    raise AssertionError("the Dagster UI did not answer in time")


MATERIALIZATIONS = """
query ($path: [String!]!) {
  assetOrError(assetKey: {path: $path}) {
    ... on Asset { assetMaterializations(limit: 1) { runId } }
  }
}"""

CHECKS = """
query ($path: [String!]!, $check: String!) {
  assetCheckExecutions(assetKey: {path: $path}, checkName: $check, limit: 1) { runId status }
}"""


LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
    __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
RUN_EVENTS = """query($id: ID!) { runOrError(runId: $id) { ... on Run { status
    eventConnection { events { __typename ... on MessageEvent { message }
      ... on ExecutionStepFailureEvent { error { message } } } } } } }"""
DONE = {"SUCCESS", "FAILURE", "CANCELED"}


def finished_run(url: str, run_id: str, timeout: float = 180) -> dict:
    """The run once it is over (UI launches are queued, then the daemon starts them)."""
    deadline = time.monotonic() + timeout
    while (run := graphql(url, RUN_EVENTS, {"id": run_id})["runOrError"])["status"] not in DONE:
        assert time.monotonic() < deadline, f"run {run_id} still {run['status']}"
        time.sleep(1)
    return run


def test_cli_refresh_shows_in_the_dev_ui_and_ctrl_c_stops_it(warehouse_copy):
    home = warehouse_copy
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    before = set(PROJECT_ROOT.glob(".tmp_dagster_home_*"))
    proc = subprocess.Popen([BENCHWH, "dev", "--port", str(port)], env=benchwh_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for_ui(url, proc)
        # the same instance settings as the CLI: the refresh queue limit
        answer = graphql(url, "{ instance { runQueueConfig { tagConcurrencyLimitsYaml } } shouldShowNux }")
        assert "benchwh/serial" in answer["instance"]["runQueueConfig"]["tagConcurrencyLimitsYaml"]
        assert answer["shouldShowNux"] is False  # no sign-up dialog over the UI

        # without a published file the rebuild publishes (an unchanged one would publish nothing)
        (home / "benchmarks.duckdb").unlink()
        refresh = run_benchwh(home, "refresh", "--no-fetch")
        assert refresh.returncode == 0, refresh.stderr
        version = re.search(r"refreshed (\S+):", refresh.stdout).group(1)
        run_prefix = version.rsplit("-", 1)[1]  # versions end in the run id's first 8 characters

        mats = graphql(url, MATERIALIZATIONS, {"path": ["publish", "benchmarks_duckdb"]})
        run_id = mats["assetOrError"]["assetMaterializations"][0]["runId"]
        assert run_id.startswith(run_prefix)
        runs = graphql(url, "{ runsOrError { ... on Runs { results { runId status } } } }")
        assert {"runId": run_id, "status": "SUCCESS"} in runs["runsOrError"]["results"]
        checks = graphql(url, CHECKS, {"path": ["landing", "openrouter", "models"], "check": "freshness"})
        assert checks["assetCheckExecutions"][0]["runId"] == run_id

        # what the UI offers but cannot work is refused in its step, before dbt or publish starts: failed with the reason
        for selection, reason in (([["marts", "fct_speed_summary"]], "refused: marts/fct_speed_summary cannot be built alone"),
                                  ([["publish", "benchmarks_duckdb"]], "refused: publish alone has nothing to publish")):
            launched = graphql(url, LAUNCH, {"p": {"mode": "default", "selector": {
                "repositoryLocationName": "orchestration.definitions", "repositoryName": "__repository__",
                "jobName": "__ASSET_JOB", "assetSelection": [{"path": p} for p in selection]}}})["launchRun"]
            assert launched["__typename"] == "LaunchRunSuccess", launched
            run = finished_run(url, launched["run"]["runId"])
            assert run["status"] == "FAILURE"
            errors = [e["error"]["message"] for e in run["eventConnection"]["events"] if e.get("error")]
            assert any(reason in message for message in errors), errors
        # neither refused run built or published anything
        assert read_version(home / "benchmarks.duckdb")["version"] == version
        assert not (home / "build" / "building.duckdb").exists()
    finally:
        os.kill(proc.pid, signal.SIGINT)  # what Ctrl-C sends
        try:
            code = proc.wait(timeout=90)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # leave nothing behind even if it failed
            except ProcessLookupError:
                pass
    assert code == 0, proc.stderr.read()
    # webserver and daemon went with it, and dagster dev made no temporary home in the repo
    try:
        os.killpg(proc.pid, 0)
        leftover = True
    except ProcessLookupError:
        leftover = False
    assert not leftover
    assert set(PROJECT_ROOT.glob(".tmp_dagster_home_*")) == before
    assert (home / "dagster" / "dagster.yaml").exists()


def dagster_processes_of(dagster_home: Path) -> list[int]:
    """Pids of processes whose environment names this DAGSTER_HOME (dagster dev, its webserver,
    daemon and code servers)."""
    marker = f"DAGSTER_HOME={dagster_home}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def test_dev_on_a_busy_port_fails_at_once_naming_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_benchwh(tmp_path / "warehouse", "dev", "--port", str(port), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"benchwh: port {port} on 127.0.0.1 is already in use " \
                                  "(another `benchwh dev`? choose one with --port)"
    # refused before anything started: no Dagster instance made, no process of it
    assert not (tmp_path / "warehouse" / "dagster").exists()
    assert dagster_processes_of(tmp_path / "warehouse" / "dagster") == []


def test_dev_killed_hard_leaves_no_dagster_process(tmp_path):
    home = tmp_path / "warehouse"
    port = free_port()
    proc = subprocess.Popen([BENCHWH, "dev", "--port", str(port)], env=benchwh_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_ui(f"http://127.0.0.1:{port}", proc)
        assert len(dagster_processes_of(home / "dagster")) >= 3  # dagster dev, webserver, daemon
    finally:
        proc.kill()  # SIGKILL: no handler of benchwh runs
        proc.wait()
    deadline = time.monotonic() + 90
    while dagster_processes_of(home / "dagster") and time.monotonic() < deadline:
        time.sleep(0.5)
    left = dagster_processes_of(home / "dagster")
    for pid in left:  # never leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert left == []

"""benchwh-dbt hands dbt's nodes to its threads longest chain first (cli/dbt_guard.py
hand_out_nodes_as_threads_free): on one thread the order is exact, so it shows both halves, a
node taken from the queue only when a thread is free and the queue's order by the chain after it.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import PROJECT_ROOT

# a -> b -> c -> d, and five models on their own, all ready at the start with a
MODELS = {"a": "select 1 as x", "b": "select x from {{ ref('a') }}", "c": "select x from {{ ref('b') }}",
          "d": "select x from {{ ref('c') }}", **{f"x{i}": f"select {i} as x" for i in range(1, 6)}}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("queue")
    (root / "models").mkdir()
    for name, sql in MODELS.items():
        (root / "models" / f"{name}.sql").write_text(sql + "\n")
    (root / "dbt_project.yml").write_text("name: queue\nversion: '1.0'\nconfig-version: 2\nprofile: queue\n"
                                          "models:\n  queue:\n    +materialized: view\n")
    (root / "profiles.yml").write_text(f"queue:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
                                       f"      path: '{root / 'queue.duckdb'}'\n      threads: 1\n")
    return root


def run_order(project: Path, chain_first: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "BENCHWH_DBT_CHAIN_FIRST"}
    if chain_first is not None:
        env["BENCHWH_DBT_CHAIN_FIRST"] = chain_first
    env["BENCHWH_HOME"] = str(project)
    target = project / f"target-{chain_first}"
    proc = subprocess.run([str(PROJECT_ROOT / ".venv" / "bin" / "benchwh-dbt"), "build", "--project-dir", str(project),
                           "--profiles-dir", str(project), "--target-path", str(target), "--log-path",
                           str(project / "logs")], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads((target / "run_results.json").read_text())["results"]
    return [r["unique_id"].rsplit(".", 1)[1] for r in results]  # in the order they finished


def test_one_thread_runs_the_longest_chain_first(project):
    assert run_order(project, None) == ["a", "b", "c", "d", "x1", "x2", "x3", "x4", "x5"]


def test_switched_off_dbt_runs_every_ready_node_in_turn(project):
    """dbt's own order: a node readied later waits behind every node handed out before it."""
    assert run_order(project, "0") == ["a", "x1", "x2", "x3", "x4", "x5", "b", "c", "d"]

"""tests/helpers/cpu_by_test.py: the plugin that says where the suite's CPU goes, run by a real pytest."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers.cpu_by_test import per_file
from tests.helpers.paths import PROJECT_ROOT

SAMPLE = '''
import time

def test_busy():
    start = time.process_time()
    while time.process_time() - start < 0.3:
        pass

def test_asleep():
    time.sleep(0.3)
'''


def test_each_test_gets_the_machines_busy_cpu_and_its_wall_time(tmp_path):
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    out = tmp_path / "cpu.jsonl"
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "BENCHWH_CPU_BY_TEST": str(out)}
    env.pop("PYTEST_XDIST_WORKER", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "tests.helpers.cpu_by_test", "test_sample.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"test_sample.py::test_busy", "test_sample.py::test_asleep"}
    # the whole machine was busy at least as long as the test's own process (0.3 CPU-s, in ticks)
    assert rows["test_sample.py::test_busy"]["cpu"] >= 0.25
    assert rows["test_sample.py::test_asleep"]["wall"] >= 0.3

    (name, cpu, wall, tests), = per_file(str(out))
    assert (name, tests) == ("test_sample.py", 2) and cpu >= 0.25 and wall >= 0.6
    summary = subprocess.run([sys.executable, "-m", "tests.helpers.cpu_by_test", str(out)], cwd=PROJECT_ROOT,
                             capture_output=True, text=True, timeout=60)
    assert summary.returncode == 0 and summary.stdout.splitlines()[1].endswith("test_sample.py"), summary.stdout
    missing = subprocess.run([sys.executable, "-m", "tests.helpers.cpu_by_test", str(tmp_path / "none.jsonl")],
                             cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and missing.stderr.strip().startswith("cpu_by_test: cannot read")

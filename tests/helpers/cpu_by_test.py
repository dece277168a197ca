"""Where the suite's CPU goes: a pytest plugin writing, per test, the whole machine's busy
CPU-seconds (/proc/stat) and the wall seconds it ran. End-to-end tests spend most of theirs in
processes they start or that serve them (benchwh, dbt, Dagster, Chromium), which no per-process
clock of the test sees; the machine's does, so run it with one worker on an otherwise idle machine:

    .venv/bin/python -m pytest -p tests.helpers.cpu_by_test -p no:cacheprovider \\
        --ignore=tests/test_spark_parity.py --ignore=tests/test_refresh_spark.py
    .venv/bin/python -m tests.helpers.cpu_by_test          # CPU-s and wall per file, costliest first

BENCHWH_CPU_BY_TEST names the JSON-lines file (default /tmp/benchwh-cpu-by-test.jsonl; appended to).
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict

import pytest

DEFAULT_OUT = "/tmp/benchwh-cpu-by-test.jsonl"


def busy_cpu_seconds() -> float:
    """CPU-seconds every core has spent on anything but idle and I/O wait since boot."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def out_path() -> str:
    return os.environ.get("BENCHWH_CPU_BY_TEST") or DEFAULT_OUT


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = busy_cpu_seconds(), time.monotonic()
    yield
    row = {"id": item.nodeid, "cpu": round(busy_cpu_seconds() - cpu, 2), "wall": round(time.monotonic() - wall, 2)}
    with open(out_path(), "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def per_file(path: str) -> list[tuple[str, float, float, int]]:
    """(file, CPU-s, wall s, tests) from the plugin's file, costliest first."""
    files: dict[str, list] = defaultdict(lambda: [0.0, 0.0, 0])
    with open(path, encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            totals = files[row["id"].split("::", 1)[0]]
            totals[0] += row["cpu"]
            totals[1] += row["wall"]
            totals[2] += 1
    return sorted(((f, round(c, 1), round(w, 1), n) for f, (c, w, n) in files.items()), key=lambda r: -r[1])


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else out_path()
    try:
        rows = per_file(path)
    except OSError as exc:
        sys.exit(f"cpu_by_test: cannot read {path}: {exc.strerror}")
    print(f"{'CPU-s':>7} {'wall s':>7} {'tests':>5}  file")
    for name, cpu, wall, tests in rows:
        print(f"{cpu:7.1f} {wall:7.1f} {tests:5d}  {name}")
    print(f"{sum(r[1] for r in rows):7.1f} {sum(r[2] for r in rows):7.1f} {sum(r[3] for r in rows):5d}  all")

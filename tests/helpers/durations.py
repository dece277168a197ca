"""Seconds per test file from a whole run's JUnit XML, the weights tests/conftest.py orders files by.

    .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --junitxml=/tmp/run.xml
    .venv/bin/python -m tests.helpers.durations /tmp/run.xml > tests/durations.json
"""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter


def per_file(junit_xml: str) -> dict[str, float]:
    seconds: Counter = Counter()
    for case in ET.parse(junit_xml).iter("testcase"):
        module = case.get("classname", "").split(".")
        if len(module) > 1 and module[0] == "tests":
            seconds[f"tests/{module[1]}.py"] += float(case.get("time") or 0)
    return {f: round(s, 1) for f, s in seconds.most_common() if s >= 1}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m tests.helpers.durations RUN.xml", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(per_file(sys.argv[1]), indent=1))

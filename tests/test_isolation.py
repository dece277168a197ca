"""What one test changes in its worker process does not reach the next (tests/conftest.py): its
environment and its signal handlers. Each pair runs in this order, in one worker (--dist loadfile)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import dagster as dg

LEFT_BEHIND = "BENCHWH_TEST_LEFT_BEHIND"


def test_a_test_that_sets_a_variable_and_leaves_it():
    os.environ[LEFT_BEHIND] = "1"  # as a job run in the test's process sets dbt's build settings


def test_the_next_test_does_not_see_it():
    assert LEFT_BEHIND not in os.environ


def test_an_in_process_dagster_run_where_sigint_is_ignored():
    @dg.asset
    def answer() -> int:
        return 42

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in pytest-xdist's workers
    # when the run ends, Dagster gives SIGTERM the handler SIGINT has (dagster._utils.interrupts)
    assert dg.materialize([answer]).success


def test_a_process_the_next_test_starts_stops_on_sigterm():
    assert signal.getsignal(signal.SIGTERM) != signal.SIG_IGN
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc.terminate()
    assert proc.wait(timeout=30) == -signal.SIGTERM

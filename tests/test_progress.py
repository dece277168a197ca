"""Progress: one live line on a terminal, a few plain lines elsewhere."""
import os
import pty
import subprocess
import sys

SCRIPT = """
from orchestration.progress import count, progress
progress("start")
for i in range(1, 101):
    count("dbt", i, 100, "nodes done")
for i in range(1, 51):
    count("localscore: fetching", i, None, "responses")
progress("end")
"""





def test_not_a_terminal_gets_a_plain_line_per_tenth():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    lines = proc.stderr.splitlines()
    assert "\r" not in proc.stderr
    counted = [l for l in lines if "nodes done" in l]
    assert len(counted) == 10 and counted[-1].endswith("dbt: 100/100 nodes done")
    assert [l.split("] ", 1)[1] for l in lines if "responses" in l] == [
        "localscore: fetching: 25 responses", "localscore: fetching: 50 responses"]
    assert lines[0].endswith("start") and lines[-1].endswith("end")


def test_a_terminal_gets_one_line_updated_in_place():
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stderr=slave, stdout=subprocess.DEVNULL)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(master)
    text = out.decode()
    # every count rewrites the same line; a finished count ends it, a plain line clears a live one
    assert text.count("\r\x1b[2K") >= 150
    assert "dbt: 100/100 nodes done\r\n" in text or "dbt: 100/100 nodes done\n" in text
    assert text.rstrip().endswith("end")
    assert len([l for l in text.replace("\r\n", "\n").split("\n") if "nodes done" in l]) == 1


def test_a_count_repeated_is_shown_once():
    script = ("from orchestration.progress import count\n"
              "for i in (1, 2, 2, 2, 2):\n    count('dbt', i, 2, 'nodes done')\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert [l.split("] ", 1)[1] for l in proc.stderr.splitlines()] == ["dbt: 1/2 nodes done", "dbt: 2/2 nodes done"]

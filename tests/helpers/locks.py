"""A home lock held by another process, as a refresh or a dbt build holds it (ingest/locks.py)."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

HOLD = ("import sys\nfrom ingest.locks import home_lock\n"
        "with home_lock(sys.argv[1]):\n    print('held', flush=True)\n    sys.stdin.read()\n")


@contextlib.contextmanager
def lock_held_elsewhere(home: Path, name: str) -> Iterator[int]:
    """`<home>/.<name>.lock` held by a child process until the block ends; yields its pid."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, name], env={**os.environ, "BENCHWH_HOME": str(home)},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder.pid
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)

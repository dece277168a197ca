"""Progress lines for people running `benchwh` (Dagster's own logs stay quiet in the CLI).

On a terminal, counts of a long phase (pages fetched, payloads landed, dbt nodes done) update
one live line in place; elsewhere (a log file, CI, `dagster dev`) they are plain lines, about
one per tenth of the phase, so logs stay short and still show movement.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import time

_START = time.monotonic()
_live = {"shown": False}
_shown: dict[str, tuple] = {}  # label -> the last count shown
PLAIN_EVERY = 25  # plain lines for a count without a known total: one per this many


def _stamp(message: str) -> str:
    # a step process of the multiprocess executor counts from the start of the process running the job
    t0 = os.environ.get("BENCHWH_PROGRESS_T0")
    elapsed = time.time() - float(t0) if t0 else time.monotonic() - _START
    return f"[{elapsed:6.1f}s] {message}"


def started_at() -> float:
    """This process's progress clock as a wall-clock time (handed to step processes)."""
    return time.time() - (time.monotonic() - _START)


def is_terminal() -> bool:
    if os.environ.get("BENCHWH_PROGRESS_PLAIN") == "1":
        return False  # several step processes write at once: no live line to share
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress(message: str) -> None:
    if _live["shown"]:
        sys.stderr.write("\r\x1b[2K")  # a plain line replaces the live one
        _live["shown"] = False
    print(_stamp(message), file=sys.stderr, flush=True)


def count(label: str, done: int, total: int | None, unit: str) -> None:
    """`label: done/total unit`, live on a terminal, a plain line now and then elsewhere."""
    if _shown.get(label) == (done, total):
        return  # the same count again (more events than nodes): nothing new to say
    _shown[label] = (done, total)
    text = f"{label}: {done}/{total} {unit}" if total else f"{label}: {done} {unit}"
    finished = total is not None and done >= total
    if is_terminal():
        width = shutil.get_terminal_size((100, 20)).columns - 1
        sys.stderr.write("\r\x1b[2K" + _stamp(text)[:width])
        sys.stderr.flush()
        _live["shown"] = True
        if finished:
            sys.stderr.write("\n")
            _live["shown"] = False
        return
    step = max(1, total // 10) if total else PLAIN_EVERY
    if finished or done % step == 0:
        progress(text)


_LANDED = re.compile(r"^\s*(\S+): landed (\d+)/(\d+) payloads$")


def landing_log(message: str) -> None:
    """The Lander's log: its `landed i/n payloads` lines become a count, the rest plain lines."""
    m = _LANDED.match(message)
    if m:
        count(f"{m.group(1)}: landing", int(m.group(2)), int(m.group(3)), "payloads")
    else:
        progress(message)


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 version', '2 versions': counts read the same in every message."""
    return f"{n} {word if n == 1 else (many or word + 's')}"

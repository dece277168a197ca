"""Exclusive lock files in the warehouse home: `.refresh.lock` (refreshes, `runs add`, the inbox),
`.publish.lock` and `.build.lock`. An flock is released by the kernel when its holder dies, so a
killed refresh never leaves a stale lock. A waiter never waits for good: it gives up after
BENCHWH_LOCK_WAIT_S (default an hour) naming the holder, whose pid and start time are in the file.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from ingest import config


class LockTimeout(Exception):
    """Another process held the lock for longer than a waiter may wait."""


def _holder(fh) -> str:
    fh.seek(0)
    text = fh.read(200).strip()
    return text or "holder unknown"


@contextlib.contextmanager
def home_lock(name: str, log: Callable[[str], None] | None = None,
              wait_s: float | None = None, home: Path | None = None) -> Iterator[None]:
    """Hold `<home>/.<name>.lock` (default home: config.home()). Waits at most `wait_s` (default
    config.lock_wait_s()) for the holder, then raises LockTimeout naming it; wait_s=0 tries once."""
    folder = Path(home) if home is not None else config.home()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f".{name}.lock"
    # never truncated on open: the holder's line stays readable to waiters
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
    with os.fdopen(fd, "r+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            wait = config.lock_wait_s() if wait_s is None else wait_s
            if wait > 0 and log:
                log(f"waiting for another {name} to finish ({_holder(fh)})")
            deadline, pause = time.monotonic() + wait, 0.05
            while True:
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"another {name} holds {path.name} ({_holder(fh)}); gave up after "
                                      f"{wait:g} s (BENCHWH_LOCK_WAIT_S)") from None
                time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
                pause = min(pause * 2, 1.0)
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    continue
        started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} since {started}\n")
        fh.flush()
        yield


def lock_held(name: str, home: Path | None = None) -> bool:
    """Whether another process holds `<home>/.<name>.lock` now (a probe: it never waits or writes)."""
    path = (Path(home) if home is not None else config.home()) / f".{name}.lock"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock this probe took
    return False

"""The lock on one source's landing folder: a landing of the whole source (a refresh) holds it
exclusively, a backfill partition (one day of fetch, orchestration/backfill.py) shared, so a
refresh never lands a payload a partition is landing."""
from __future__ import annotations

import contextlib
import fcntl
import os
from typing import Iterator

from ingest import config


@contextlib.contextmanager
def landing_lock(source: str, shared: bool) -> Iterator[None]:
    """flock on the source's landing folder: exclusive for a whole landing, shared for a day's."""
    folder = config.landing_dir() / source
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock

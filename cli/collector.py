"""CPython's cyclic garbage collector in the command-line processes.

A full collection walks every object the collector tracks, and the interpreter's shutdown runs
several more. These processes hold hundreds of thousands of objects for their whole life (the
imported Dagster, dbt, pandas and pyarrow modules, the Dagster definitions, dbt's manifest) that
never become garbage. Measured on the offline snapshot: the dbt build spent ~0.7 s in 7 full
collections and ~0.5 s shutting down, of ~9 CPU-s; a `benchwh refresh` with nothing new spent
~0.9 s of ~4 s shutting down. `gc.freeze()` leaves the objects alive at that moment out of every
later collection. Reference counting still frees them (it frees most objects); only an object in
a reference cycle that becomes garbage after it was frozen is never reclaimed.
"""
from __future__ import annotations

import gc
import sys
from typing import NoReturn


def exit_without_collecting(code: int | None) -> NoReturn:
    """sys.exit(code) without the shutdown's collections walking every object still alive. The
    atexit handlers, stream flushes and reference-counted finalizers run as before; objects in
    reference cycles are left to the operating system, which Python never promised otherwise
    ("It is not guaranteed that __del__() methods are called for objects that still exist when the
    interpreter exits")."""
    gc.freeze()
    sys.exit(code)


def _freeze_after_full_collection(phase: str, info: dict) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def tenure_survivors() -> None:
    """Freeze what survives each full collection: in a process that lives for one job (a dbt
    build) that is its long-lived state (the imports, the parsed manifest), which later full
    collections then skip. Not for long-lived processes (a live refresh, the dev server): a
    survivor that later becomes cyclic garbage stays until the process ends."""
    if _freeze_after_full_collection not in gc.callbacks:
        gc.callbacks.append(_freeze_after_full_collection)

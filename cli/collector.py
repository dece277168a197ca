"""CPython's cyclic garbage collector in the command-line processes.

A full collection walks every object the collector tracks, and the interpreter's shutdown runs
several more. These processes hold hundreds of thousands of objects for their whole life (the
imported Dagster, dbt, pandas and pyarrow modules, the Dagster definitions, dbt's manifest) that
never become garbage. Measured on the offline snapshot: the dbt build spent ~0.7 s in 7 full
collections and ~0.5 s shutting down, of ~9 CPU-s; a `benchwh refresh` with nothing new spent
~0.9 s of ~4 s shutting down. `gc.freeze()` leaves the objects alive at that moment out of every
later collection. Reference counting still frees them (it frees most objects); only an object in
a reference cycle that becomes garbage after it was frozen is never reclaimed.

No `gc.callbacks` here: a callback runs Python inside a collection, and a collection can start
inside C code that CPython 3.11 does not expect to be interleaved. Two of dbt's threads building
AST objects (`ast.literal_eval` while compiling) then share one recursion counter and one fails
with "SystemError: AST constructor recursion depth mismatch" (seen in `make test` with a callback
that froze after each full collection; reproduced with two threads and any callback). The
freezes are made at points of a single thread instead: in cli/dbt_guard.py, and after a
refresh has loaded its pipeline (`loading()`, before the run starts).
"""
from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from typing import Iterator, NoReturn


def exit_without_collecting(code: int | None) -> NoReturn:
    """sys.exit(code) without the shutdown's collections walking every object still alive. The
    atexit handlers, stream flushes and reference-counted finalizers run as before; objects in
    reference cycles are left to the operating system, which Python never promised otherwise
    ("It is not guaranteed that __del__() methods are called for objects that still exist when the
    interpreter exits")."""
    gc.freeze()
    sys.exit(code)


# Set by the `benchwh` program (cli.main.run): what a `loading()` block loaded is then frozen.
# Tests call main() in their own long-lived process, where it stays collectable.
freeze_what_loads = False


@contextmanager
def loading() -> Iterator[None]:
    """No collections inside the block, for loading a large library, which only adds live
    objects; in the program, what was loaded is frozen after it. Loading Dagster, the definitions
    and the dbt manifest ran 4 full collections (each walking every object made so far) and ~50
    younger ones; a refresh with nothing new: 5 full collections, 0.43 CPU-s, became 3, 0.09."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze_what_loads:
            gc.freeze()
        if was_enabled:
            gc.enable()

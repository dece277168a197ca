"""What was parsed from a file, kept in this process while the file is unchanged.

A refresh reads a source's raw manifest and ledger log several times (landing, the landing checks,
freshness, the damage check before dbt). At scale 1 each read of LocalScore's parses ~100,000 JSON
lines (1-2.5 s). Both files only grow by appends or are replaced whole (os.replace), so the file's
inode, size and modification time say whether an earlier parse still holds.
"""
from __future__ import annotations

import os
from pathlib import Path

_KEPT: dict[str, tuple[tuple, object]] = {}


def file_stamp(path: Path) -> tuple | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def kept(path: Path, stamp: tuple) -> object | None:
    """The value kept for `path` under this stamp, else None."""
    entry = _KEPT.get(str(path))
    return entry[1] if entry is not None and entry[0] == stamp else None


def keep(path: Path, stamp: tuple | None, value: object) -> None:
    if stamp is None:
        _KEPT.pop(str(path), None)
    else:
        _KEPT[str(path)] = (stamp, value)


def forget_all() -> None:
    """Drop every kept parse (a refresh does once landing is checked: ~100 MB at scale 1)."""
    _KEPT.clear()

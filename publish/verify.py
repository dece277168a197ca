"""Checks that a DuckDB file is whole before it is published, kept or restored (issue #12).

A file is *verified* when it opens read-only, every table in marts/site/audit reads end to end
(DuckDB checks each block's checksum as it reads it) and its sha256 is recorded in
`history/index.json`. The cheap check (refresh, `benchwh status`) compares the published file's
sha256 with the index; the full one (`benchwh status --verify`, rollback, history copies) reads
every table as well.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Callable

import duckdb

from ingest import config
from ingest.files import fsync_dir, tmp_name, write_atomically
from ingest.raw_store import file_sha256

# temporary names this project writes: `<name>.tmp<pid>` and `.rollback-<version>.tmp<pid>`
_TMP_PID = re.compile(r"\.tmp(\d+)$")


class DamagedFile(Exception):
    """A file that should be a complete warehouse is not. The message names the file."""


def read_all_tables(path: Path) -> int:
    """Open read-only and read every column of every table; returns the table count or raises DamagedFile."""
    try:
        con = duckdb.connect(str(path), read_only=True, config=config.duckdb_config())
    except duckdb.Error as exc:
        raise DamagedFile(f"{path}: cannot be opened ({_first_line(exc)})") from None
    try:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() "
                             "WHERE database_name = current_database()").fetchall()
        for schema, table in tables:
            # hash(t) of the whole row touches every column, so every data block is read and checksummed
            con.execute(f'SELECT count(*), bit_xor(hash(t)) FROM "{schema}"."{table}" t').fetchone()
        if not tables:
            raise DamagedFile(f"{path}: holds no tables")
        return len(tables)
    except duckdb.Error as exc:
        raise DamagedFile(f"{path}: a table does not read ({_first_line(exc)})") from None
    finally:
        con.close()


def _first_line(exc: BaseException) -> str:
    return next((l.strip() for l in str(exc).splitlines() if l.strip()), type(exc).__name__)


# -- the checksum index beside history/ ----------------------------------------------------

def index_path() -> Path:
    return config.home() / "history" / "index.json"


def load_index() -> dict[str, dict]:
    try:
        doc = json.loads(index_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc.get("versions", {}) if isinstance(doc, dict) else {}


def save_index(versions: dict[str, dict]) -> None:
    write_atomically(index_path(), json.dumps({"versions": versions}, indent=2, sort_keys=True) + "\n", durable=True)


def record_in_index(version: str, sha256: str, size: int, tables: int, inputs: str | None = None) -> None:
    versions = load_index()
    # marked published only once it has replaced the published file (mark_published): a publish
    # killed before that leaves a copy rollback never chooses
    versions[version] = {"sha256": sha256, "bytes": size, "tables": tables, "published": False}
    if inputs:
        versions[version]["inputs"] = inputs  # publish/inputs.py: what this version was built from
    keep = {p.stem for p in (config.home() / "history").glob("*.duckdb")} | {version}
    versions = {v: e for v, e in versions.items() if v in keep}
    save_index(versions)


def mark_published(version: str) -> None:
    versions = load_index()
    if version in versions and versions[version].get("published") is not True:
        versions[version]["published"] = True
        save_index(versions)


def was_published(version: str, index: dict) -> bool:
    """A history version that became the published file (entries older than the marker count)."""
    return index.get(version, {}).get("published", True) is not False


def record_inputs(version: str, inputs: str) -> None:
    """A build equal to the published version: that version is also the build of these inputs."""
    versions = load_index()
    if version in versions and versions[version].get("inputs") != inputs:
        versions[version]["inputs"] = inputs
        save_index(versions)


def version_of_sha(sha256: str) -> str | None:
    return next((v for v, e in load_index().items() if e.get("sha256") == sha256), None)


# -- writing without ever leaving a torn file under a final name ----------------------------

def copy_verified(source: Path, final: Path, expect_sha256: str | None = None,
                  fault_point: str | None = None) -> tuple[str, int]:
    """Copy to a temporary name, fsync, read every table, then rename. Returns (sha256, tables).

    A crash or a full disk at any point leaves at most a `.tmp<pid>` file (swept later), never a
    torn file under the final name.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_name(final)
    try:
        with open(source, "rb") as src, open(tmp, "wb") as dst:
            h = hashlib.sha256()
            copied = 0
            for chunk in iter(lambda: src.read(1 << 20), b""):
                dst.write(chunk)
                h.update(chunk)
                copied += len(chunk)
                if fault_point and copied >= 1 << 20:
                    fault(fault_point)
            dst.flush()
            os.fsync(dst.fileno())
        digest = h.hexdigest()
        if expect_sha256 and digest != expect_sha256:
            raise DamagedFile(f"{source}: sha256 {digest[:12]} differs from the recorded {expect_sha256[:12]}")
        if file_sha256(tmp) != digest:
            raise DamagedFile(f"{tmp}: the copy differs from {source} after writing")
        tables = read_all_tables(tmp)
        os.replace(tmp, final)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise disk_error(exc, final) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(final.parent)
    return digest, tables


def disk_error(exc: OSError, path: Path) -> OSError:
    """A full disk as one line naming the path and the free space; other errors unchanged."""
    if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
        return exc
    return OSError(exc.errno, f"disk full writing {path} ({_free_bytes(path) / 1e6:.1f} MB free)")


def _free_bytes(path: Path) -> int:
    """Free space of the disk `path` is written to: its nearest existing folder's (a folder under
    the home may be a disk of its own); 0 when that cannot be read."""
    folder = Path(path)
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return 0


_DISK_FULL = ("no space left on device", "disk i/o error", "database or disk is full", "disk quota exceeded",
              "disk full")


def disk_full_line(text: str) -> str | None:
    """One line for a full disk, naming the path written (when the error says it, else the warehouse
    home) and the free space where it was written; None when the text is not about a full disk."""
    lowered = (text or "").lower()
    if not any(marker in lowered for marker in _DISK_FULL):
        return None
    home = config.home()
    found = re.search(re.escape(str(home)) + r"[^\s'\"]*", text or "")
    written = Path(found.group(0).rstrip('.,:;)')) if found else home
    return f"disk full writing {written} ({_free_bytes(written) / 1e6:.1f} MB free)"


def fault(point: str) -> None:
    """Test hook: BENCHWH_FAULT=<point> kills this process (SIGKILL) when it reaches that point."""
    if os.environ.get("BENCHWH_FAULT") == point:
        os.kill(os.getpid(), 9)


# -- the published file ------------------------------------------------------------------

def check_published(full: bool = False) -> dict:
    """State of the published file: {"ok", "version", "problem"}.

    Cheap (default): it opens, names its version, and its sha256 is the one recorded for that
    version in history/index.json. Full: every table reads as well.
    """
    from publish.history import read_version

    path = config.published_path()
    if not path.exists():
        return {"ok": True, "version": None, "problem": None}
    info = read_version(path)
    if info is None:
        return {"ok": False, "version": None, "problem": f"{path}: cannot be opened or names no version"}
    version = info["version"]
    recorded = load_index().get(version, {}).get("sha256")
    if recorded and file_sha256(path) != recorded:
        return {"ok": False, "version": version,
                "problem": f"{path}: sha256 differs from the one recorded for version {version}"}
    if full:
        try:
            read_all_tables(path)
        except DamagedFile as exc:
            return {"ok": False, "version": version, "problem": str(exc)}
    return {"ok": True, "version": version, "problem": None}


# -- temporary and abandoned files -------------------------------------------------------

def pid_alive(pid: int) -> bool:
    """A running process (a zombie no one reaped yet writes nothing: dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _dead_temporary(name: str) -> bool:
    # a string test before the pattern: raw blobs and ledger entries are ~200,000 files at scale 1
    m = _TMP_PID.search(name) if ".tmp" in name else None
    return m is not None and int(m.group(1)) != os.getpid() and not pid_alive(int(m.group(1)))


def sweep_temporaries(log: Callable[[str], None] | None = None) -> int:
    """Remove `*.tmp<pid>` files and folders (a release being written, publish/release.py) of dead
    processes anywhere in the home, and legacy `.rollback-*.duckdb` copies. Call while holding the
    refresh lock."""
    home = config.home()
    removed = 0
    if not home.exists():
        return 0
    top = str(home)
    for folder, dirs, files in os.walk(top, followlinks=False):
        stale_dirs = [d for d in dirs if _dead_temporary(d)]
        for name in stale_dirs:
            shutil.rmtree(Path(folder, name), ignore_errors=True)
            removed += 1
        dirs[:] = [d for d in dirs if d not in ("dagster",) and d not in stale_dirs]
        for name in files:
            if _dead_temporary(name) or (folder == top and name.startswith(".rollback-") and name.endswith(".duckdb")):
                Path(folder, name).unlink(missing_ok=True)
                removed += 1
    if removed and log:
        log(f"cleaned {removed} abandoned temporary files")
    return removed

"""The ledger: what became of each stored payload of a source. The only reader and writer of
landing/<source>/_ledger/.

  <sha256>.json     one entry per payload (landed | rejected | failed); a payload without
                    one is pending, so deleting landing/ replays raw/
  _outcomes.jsonl   the same entries in one file, for reading them fast
"""
from __future__ import annotations

import fcntl
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ingest.file_memo import file_stamp, keep, kept
from ingest.files import file_line_chunks, json_lines_at_once

LEDGER_DIR = "_ledger"
LEDGER_LOG = "_outcomes.jsonl"  # the ledger files repeated in one file (read fast; see outcomes())


@dataclass(slots=True)
class PayloadOutcome:
    sha256: str
    fetched_at: str
    url: str
    status: str  # landed | rejected | failed
    reason: str | None = None
    parsed: dict[str, int] = field(default_factory=dict)
    landed: dict[str, int] = field(default_factory=dict)
    quarantined: dict[str, int] = field(default_factory=dict)  # distinct records per entity
    # landing files this payload's rows went to -> their sha256, checked before a build reads them
    files: dict[str, str] = field(default_factory=dict)


def _doc(o: PayloadOutcome) -> dict:
    """asdict(o), without its deep copy (~0.2 ms an entry)."""
    return {"sha256": o.sha256, "fetched_at": o.fetched_at, "url": o.url, "status": o.status,
            "reason": o.reason, "parsed": dict(o.parsed), "landed": dict(o.landed),
            "quarantined": dict(o.quarantined), "files": dict(o.files)}


# Equal count maps are one object each, shared by the entries holding them, and the strings are
# interned (the raw manifest's entries and the ledger's file names hold the same hashes, URLs and
# times): an entry then holds ~100 bytes of its own rather than ~1,400 (a million payloads at
# scale 10). Shared maps are never changed: readers only read an entry, and landing compacts its
# own only once they are recorded.
_SHARED: dict[tuple, dict] = {}
_SHARED_MAX = 100_000
_STATUSES = {s: s for s in ("landed", "rejected", "failed")}


def _shared(counts: dict) -> dict:
    key = tuple(counts.items())
    found = _SHARED.get(key)
    if found is None:
        found = counts
        if len(_SHARED) < _SHARED_MAX:
            _SHARED[key] = counts
    return found


def _interned(value):
    return sys.intern(value) if type(value) is str else value


def compact(outcome: PayloadOutcome) -> PayloadOutcome:
    """The outcome with its strings interned and its count maps (and an empty `files`) shared."""
    outcome.sha256 = _interned(outcome.sha256)
    outcome.fetched_at = _interned(outcome.fetched_at)
    outcome.url = _interned(outcome.url)
    outcome.status = _STATUSES.get(outcome.status, outcome.status)
    outcome.parsed = _shared(outcome.parsed)
    outcome.landed = _shared(outcome.landed)
    outcome.quarantined = _shared(outcome.quarantined)
    if not outcome.files:
        outcome.files = _shared(outcome.files)
    return outcome


def _outcome(doc: dict) -> PayloadOutcome:
    """The entry of a ledger document (through __init__: its defaults, its errors)."""
    return compact(PayloadOutcome(**doc))


def _log_docs(log: Path) -> Iterator:
    """Each whole line of the log, parsed; a torn one (an interrupted append) is left out."""
    for lines in file_line_chunks(log):
        docs = json_lines_at_once(lines)
        if docs is not None:
            yield from docs
            continue
        for line in lines:
            try:
                yield json.loads(line)
            except ValueError:
                continue  # a torn last line


class Ledger:
    """The ledger of one source under a landing root."""

    def __init__(self, landing_root: Path, source: str):
        self.source = source
        self.dir = Path(landing_root) / source / LEDGER_DIR

    def shas(self) -> set[str]:
        """Every ledgered payload's sha256 (landed, rejected or failed)."""
        if not self.dir.exists():
            return set()
        return {sys.intern(p.name[:-5]) for p in os.scandir(self.dir)
                if p.name.endswith(".json") and not p.name.startswith(".")}

    def get(self, sha256: str) -> PayloadOutcome | None:
        """One payload's entry, or None while it is pending."""
        path = self.dir / f"{sha256}.json"
        return PayloadOutcome(**json.loads(path.read_text())) if path.exists() else None

    def outcomes(self) -> list[PayloadOutcome]:
        """Every ledgered payload, oldest first.

        The `<sha256>.json` files are the ledger; `_outcomes.jsonl` repeats them in one file so a
        warehouse of 100,000 payloads is read in a second rather than 100,000 file opens (~20 s).
        A ledger file the log lacks (an older landing, an interrupted write) is read itself and
        then added to the log; log lines without a ledger file are ignored.
        """
        names = self.shas()
        if not names:
            return []
        log = self.dir / LEDGER_LOG
        stamp = file_stamp(log)
        earlier = kept(log, stamp)  # this process read the same log for the same ledger files
        if earlier is not None and earlier[0] == names:
            return list(earlier[1])
        found: dict[str, PayloadOutcome] = {}
        for doc in _log_docs(log):
            if isinstance(doc, dict) and doc.get("sha256") in names:
                found[doc["sha256"]] = _outcome(doc)
        missing = {sha: json.loads((self.dir / f"{sha}.json").read_text()) for sha in names - found.keys()}
        if missing:
            self._append_log([missing[sha] for sha in sorted(missing)])
            found.update((sha, _outcome(doc)) for sha, doc in missing.items())
        out = sorted(found.values(), key=lambda o: (o.fetched_at, o.sha256))
        # readers never change an entry read from the ledger (landing makes new ones)
        keep(log, file_stamp(log) if missing else stamp, (names, out))
        return list(out)

    def record(self, outcomes: list[PayloadOutcome]) -> None:
        """Write the entries of a batch (each file atomically), then add them to the log.

        Last payload first: while the first one is unrecorded the batch counts as unfinished
        (Lander drops such a batch's files and lands it again).
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        docs = [_doc(o) for o in outcomes]
        folder = str(self.dir)
        for doc in reversed(docs):
            # os.open/os.write: a pathlib text write costs ~5x as much, 100,000 times in a replay
            tmp, final = f"{folder}/.{doc['sha256']}.tmp", f"{folder}/{doc['sha256']}.json"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            try:
                os.write(fd, json.dumps(doc, sort_keys=True).encode("utf-8"))
            finally:
                os.close(fd)
            os.replace(tmp, final)
        self._append_log(docs)
        for outcome in outcomes:  # recorded: landing changes them no more
            compact(outcome)

    def forget(self, sha256: str) -> None:
        """Drop a payload's entry: it is pending again and lands on the next run."""
        (self.dir / f"{sha256}.json").unlink(missing_ok=True)

    def _append_log(self, docs: list[dict]) -> None:
        if docs:
            with (self.dir / LEDGER_LOG).open("a", encoding="utf-8") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)  # backfill partitions of a source append at once
                fh.write("".join(json.dumps(d, sort_keys=True) + "\n" for d in docs))


"""`benchwh runs add` and the inbox: receive files, decide, store, land.

For each received file (files.py refuses hostile ones first):
  1. wrap it with its sidecar/CLI metadata and the trusted keys that match (intake.py);
  2. parse the wrapper exactly as landing will (so the verdict is the landed one);
  3. compare with what is already landed: same file bytes -> `duplicate`; a run id already
     landed -> `duplicate` (tool outputs re-serialized hash to the same id), except a run file
     whose submission_id is known with other bytes -> `rejected: replay`;
  4. store the wrapper in the raw store under source `runs`; parse-rejected files are stored
     too (they land in the quarantine with their reason, rebuilt from raw like the rest);
     duplicates and replays are not stored (nothing of them would land).
Then the Lander lands every pending `runs` payload.
"""
from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import duckdb

from ingest import config
from ingest.landing import Lander
from ingest.locks import home_lock
from ingest.raw_store import RawStore, parse_iso, utc_iso
from ingest.source import SourceFailed
from ingest.measure.machine import CPU_ONLY
from ingest.sources.runs import dsse
from ingest.sources.runs.errors import RunIntakeError, RunRejected
from ingest.sources.runs.files import MAX_FILE_BYTES, Received, collect
from ingest.sources.runs.intake import make_intake, parse_intake, validate_meta
from ingest.sources.runs.payload import loads_strict
from ingest.sources.runs.source import RunsSource

SOURCE = "runs"


@dataclass
class FileResult:
    name: str
    status: str  # accepted | duplicate | rejected
    reason: str | None = None
    check: str | None = None
    runs: list[str] = field(default_factory=list)  # source_run_ids accepted
    samples: int = 0
    path: Path | None = None
    trust: str | None = None  # signed | unverified, for accepted files
    contributor: str | None = None
    note: str | None = None  # where a fact the file lacked came from


    def line(self) -> str:
        if self.status == "rejected":
            return f"{self.name}: rejected: {self.reason}"
        if self.status == "duplicate":
            return f"{self.name}: duplicate" + (f" ({self.reason})" if self.reason else "")
        trust = f" as {self.trust}" if self.trust else ""
        if self.trust == "signed" and self.contributor:
            trust += f" (key of {self.contributor})"
        elif self.trust == "unverified":
            trust += " (no trusted signature: kept in marts, left out of summaries and site tables)"
        return (f"{self.name}: accepted{trust}, {len(self.runs)} run{'s' if len(self.runs) != 1 else ''}, "
                f"{self.samples} sample{'s' if self.samples != 1 else ''} landed"
                + (f" ({self.note})" if self.note else ""))


class KnownRuns:
    """What is already landed (or stored and pending): run ids and file hashes.

    Read from a cache, landing/runs/_known.jsonl (one line per landed payload: its raw sha256,
    file sha256 and run ids), caught up from the ledger on load: only payloads landed since the
    last load are read from their Parquet files, so adding files to a large warehouse costs
    time in proportion to what is new. The cache is derived (delete it and it is rebuilt).
    """

    def __init__(self, store: RawStore, lander: Lander):
        self.run_files: dict[tuple[str, str], set[str]] = {}
        self.files: set[str] = set()
        self.index = lander.root / SOURCE / "_known.jsonl"
        covered: set[str] = set()
        if self.index.exists():
            for line in self.index.read_text(encoding="utf-8").splitlines():
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line: that payload is caught up again below
                covered.add(item["raw"])
                for source, run_id in item["runs"]:
                    self.add(source, run_id, item["file"])
        fresh = []
        new = sorted(lander.ledger(SOURCE).shas() - covered)
        if new:
            fresh = self._catch_up(lander, new)
        if fresh:
            with self.index.open("a", encoding="utf-8") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                fh.write("".join(json.dumps(item, sort_keys=True) + "\n" for item in fresh))
                fcntl.flock(fh, fcntl.LOCK_UN)
        for entry in lander.pending(SOURCE):  # stored but not landed yet (an interrupted add)
            try:
                doc, runs = parse_intake(store.read(entry), parse_iso(entry.fetched_at))
            except (RunRejected, ValueError, OSError):
                continue
            for run in runs:
                self.add(run.source, run.source_run_id, doc["file_sha256"])

    def _catch_up(self, lander: Lander, shas: list[str]) -> list[dict]:
        """Index entries for landed payloads: from their own Parquet file, or (landed in a
        batch, `<first sha>-<n>.parquet`) from one scan of the batch files."""
        folder = lander.entity_dir(SOURCE, "runs")
        items = {sha: {"raw": sha, "file": None, "runs": []} for sha in shas}
        own = [str(folder / f"{sha}.parquet") for sha in shas if (folder / f"{sha}.parquet").exists()]
        batched = set(shas) - {Path(p).stem for p in own}
        queries = []
        if own:
            queries.append(("SELECT _raw_sha256, source, source_run_id, file_sha256 FROM read_parquet(?)", [own]))
        if batched and list(folder.glob("*-*.parquet")):
            queries.append(("SELECT _raw_sha256, source, source_run_id, file_sha256 FROM read_parquet(?) "
                            "WHERE _raw_sha256 IN (SELECT unnest(?))",
                            [str(folder / "*-*.parquet"), sorted(batched)]))
        con = duckdb.connect()
        try:
            for sql, params in queries:
                for raw, source, run_id, file_sha in con.execute(sql, params).fetchall():
                    if raw in items:
                        items[raw]["file"] = file_sha
                        items[raw]["runs"].append([source, run_id])
                        self.add(source, run_id, file_sha)
        finally:
            con.close()
        return [items[sha] for sha in shas]

    def add(self, source: str, run_id: str, file_sha: str | None) -> None:
        self.run_files.setdefault((source, run_id), set()).add(file_sha)
        if file_sha:
            self.files.add(file_sha)


def merge_meta(sidecar: bytes | None, flags: dict | None, name: str) -> dict:
    """Sidecar `<file>.meta.json` values, overridden by CLI flags (the explicit word wins)."""
    meta = {}
    if sidecar is not None:
        meta = validate_meta(loads_strict(sidecar, f"{name}.meta.json"), f"{name}.meta.json")
    for k, v in (flags or {}).items():
        if v is not None:
            meta[k] = v
    return validate_meta(meta, "meta") if meta else {}


def receive(items: list[Received], home: Path | None = None, flags: dict | None = None,
            now: datetime | None = None, log: Callable[[str], None] | None = None,
            lock_wait_s: float | None = None) -> list[FileResult]:
    """Decide, store and land a batch of received files. Returns one result per file.

    `home` is the warehouse home (default config.home()). Lands under the home's refresh lock, so
    a refresh never builds half a batch (waits at most `lock_wait_s`, default BENCHWH_LOCK_WAIT_S,
    then raises LockTimeout). Raises RunIntakeError when the trusted keys cannot be read
    (nothing is received then).
    """
    home = Path(home) if home is not None else config.home()
    with home_lock("refresh", log, wait_s=lock_wait_s, home=home):
        return _receive(items, home, flags, now, log)


def _receive(items: list[Received], home: Path, flags: dict | None, now: datetime | None,
             log: Callable[[str], None] | None) -> list[FileResult]:
    store = RawStore(config.raw_dir(home))
    lander = Lander(config.landing_dir(home), store, log=lambda _m: None)
    source = RunsSource()
    lander.ensure_layout(source)
    try:
        trusted = dsse.load_trusted_keys(home)
    except ValueError as exc:
        raise RunIntakeError(str(exc)) from None
    known = KnownRuns(store, lander)
    budget = RejectedBudget(store, lander)
    results: list[FileResult] = []
    stored: dict[str, FileResult] = {}  # raw sha256 of an accepted wrapper -> its result
    context = folder_gpus(items, now or datetime.now(timezone.utc), flags, trusted)
    with store.batched():  # one manifest write (and fsync) for the whole batch
        for item in items:
            received_at = now or datetime.now(timezone.utc)
            result, raw_sha = _decide(item, flags, trusted, known, store, received_at, budget,
                                      context.get(_folder_of(item)))
            results.append(result)
            if raw_sha:
                stored[raw_sha] = result
    # land_pending validates a backlog in batches; it stops at a payload that fails as a whole
    # (ledgered as failed), so go on until nothing is pending, then read each file's verdict
    for _ in range(len(stored) + 1):
        try:
            lander.land_pending(source)
            break
        except SourceFailed:
            continue
    ledger = lander.ledger(SOURCE)
    for sha, result in stored.items():
        outcome = ledger.get(sha)
        if outcome is None or outcome.status != "landed":
            result.status, result.check = "rejected", "validation"
            result.reason = (outcome.reason if outcome else None) or "not landed"
            result.runs, result.samples = [], 0
    if log:
        for result in results:
            log(result.line())
    return results


class RejectedBudget:
    """Rejected files are kept in raw/ (their quarantine rows are rebuilt from it), but within
    bounds: at most REJECTED_KEEP_FILE_BYTES each and REJECTED_KEEP_TOTAL_BYTES in all (env
    BENCHWH_REJECTED_RAW_MB). A new rejection that does not fit prunes the oldest kept ones
    (their raw bytes and manifest lines; their quarantine rows stay until landing is rebuilt);
    one larger than a file's share is reported, its bytes not kept."""

    def __init__(self, store: RawStore, lander: Lander):
        self.store = store
        self.total = float(os.environ.get("BENCHWH_REJECTED_RAW_MB") or REJECTED_KEEP_TOTAL_BYTES / 1e6) * 1e6
        rejected = {o.sha256 for o in lander.outcomes(SOURCE) if o.status == "rejected"}
        self.kept = sorted((e for e in store.payloads(SOURCE) if e.sha256 in rejected),
                           key=lambda e: (e.fetched_at, e.sha256))  # oldest first
        self.used = sum(e.bytes for e in self.kept)
        self.pruned = 0

    def take(self, size: int) -> bool:
        if size > REJECTED_KEEP_FILE_BYTES or size > self.total:
            return False
        # only what earlier calls kept can be pruned: this batch's own lines are not written yet
        room = self.total - self.used + sum(e.bytes for e in self.kept)
        if size > room:
            return False
        oldest: set[str] = set()
        while self.used + size > self.total:
            entry = self.kept.pop(0)
            oldest.add(entry.sha256)
            self.used -= entry.bytes
        if oldest:
            self.pruned += self.store.remove_entries(SOURCE, lambda e: e.sha256 in oldest)
        self.used += size
        return True


REJECTED_KEEP_FILE_BYTES = 256 * 1024
REJECTED_KEEP_TOTAL_BYTES = 20 * 1000 * 1000


def _folder_of(item: Received) -> str:
    if item.path is not None:
        return str(item.path.parent)
    return item.name.rsplit("/", 1)[0] if "/" in item.name else item.name.split("!", 1)[0]


def folder_gpus(items: list[Received], received_at: datetime, flags: dict | None = None,
                trusted=()) -> dict[str, tuple[str, str]]:
    """Folder -> (GPU, file naming it) where the tool outputs received together from one folder or
    archive name exactly one GPU (a llama-server log's device, llama-bench's gpu_info): the
    machine a sibling output that names none (Ollama, vLLM) was made on. Only a file that is
    accepted itself (its sidecar, flags and runs as `_decide` reads them) vouches for a GPU."""
    named: dict[str, dict[str, str]] = {}
    for item in items:
        if item.body is None or item.reason is not None:
            continue
        try:
            meta = merge_meta(item.sidecar, flags, item.name)
            wrapper, _kind = make_intake(item.body, item.name, meta, trusted)
            _, runs = parse_intake(wrapper, received_at)
        except RunRejected:
            continue
        for run in runs:
            if run.gpu and run.gpu != CPU_ONLY:
                named.setdefault(_folder_of(item), {}).setdefault(run.gpu, item.name)
    return {folder: next(iter(gpus.items())) for folder, gpus in named.items() if len(gpus) == 1}


def takes_folder_gpu(exc: RunRejected, meta: dict, folder_gpu: tuple[str, str] | None) -> bool:
    """Whether a file rejected for its missing GPU is parsed again with the GPU its accepted sibling
    files name: only when that is all it lacks, a sibling names one, and no flag or sidecar gave one."""
    return exc.check in ("missing_gpu", "missing_context") and bool(folder_gpu) and "gpu" not in meta


def _decide(item: Received, flags, trusted, known: KnownRuns, store: RawStore,
            received_at: datetime, budget: "RejectedBudget | None" = None,
            folder_gpu: tuple[str, str] | None = None) -> tuple[FileResult, str | None]:
    """The verdict on one file, and the raw sha256 of its wrapper when it was stored as new."""
    res = FileResult(item.name, "rejected", item.reason, item.check, path=item.path)
    if item.reason is not None:
        return res, None
    try:
        meta = merge_meta(item.sidecar, flags, item.name)
    except RunRejected as exc:
        res.reason, res.check = exc.reason, exc.check
        return res, None
    wrapper, _kind = make_intake(item.body, item.name, meta, trusted)
    try:
        try:
            doc, runs = parse_intake(wrapper, received_at)
        except RunRejected as exc:
            if not takes_folder_gpu(exc, meta, folder_gpu):
                raise
            # the GPU a sibling file names; kept in the wrapper's meta, so a replay reads the same
            gpu, source = folder_gpu
            wrapper, _kind = make_intake(item.body, item.name, {**meta, "gpu": gpu}, trusted)
            doc, runs = parse_intake(wrapper, received_at)
            res.note = f"GPU {gpu!r} from {source} beside it"
    except RunRejected as exc:
        res.reason, res.check = exc.reason, exc.check
        if len(item.body) <= MAX_FILE_BYTES and (budget is None or budget.take(len(wrapper))):
            store.put(SOURCE, wrapper, url=f"file://{item.name}", ext="json", fetched_at=utc_iso(received_at))
        return res, None
    if doc["file_sha256"] in known.files:
        res.status, res.reason = "duplicate", "same file already added"
        return res, None
    new_runs = []
    for run in runs:
        seen = known.run_files.get((run.source, run.source_run_id))
        if seen is None:
            new_runs.append(run)
        elif run.source == "runfile" and run.source_file is None:
            # (a vouched tool output signed again names the same submission: a duplicate)
            res.reason, res.check = (f"replay: submission_id {run.submission_id} was already added "
                                     "with other bytes"), "replay"
            return res, None
    if not new_runs:
        res.status, res.reason = "duplicate", "same measurements already added"
        return res, None
    entry, _ = store.put(SOURCE, wrapper, url=f"file://{item.name}", ext="json",
                         fetched_at=utc_iso(received_at))
    for run in runs:
        known.add(run.source, run.source_run_id, doc["file_sha256"])
    res.status, res.reason = "accepted", None
    res.runs = [r.source_run_id for r in new_runs]
    res.samples = sum(len(r.samples) for r in new_runs)
    # a file's runs share one verdict on their signature
    res.trust = "signed" if all(r.trust == "signed" for r in new_runs) else "unverified"
    res.contributor = next((r.contributor for r in new_runs if r.contributor), None)
    return res, entry.sha256


def add_paths(paths: list[Path], home: Path | None = None, flags: dict | None = None,
              log: Callable[[str], None] | None = None) -> list[FileResult]:
    return receive(list(collect([Path(p) for p in paths])), home, flags, log=log)


def vouch_paths(paths: list[Path], key, home: Path | None = None, flags: dict | None = None,
                log: Callable[[str], None] | None = None, now: datetime | None = None) -> list[FileResult]:
    """`benchwh runs add PATH... --key KEY`: sign each tool output's runs (vouch.py) and land the
    signed run files, exactly as `runs add` lands any run file. The envelopes are what is stored
    in raw/runs/ (the tool output itself is named in them by its sha256); a file that cannot be
    parsed is rejected with the reason `runs add` gives, and nothing of it is signed or stored."""
    from ingest.sources.runs.vouch import vouch

    items = list(collect([Path(p) for p in paths]))
    signed_at = now or datetime.now(timezone.utc)
    context = folder_gpus(items, signed_at, flags)
    results: list[FileResult | None] = []
    envelopes: list[Received] = []
    slots: list[int] = []
    for item in items:
        if item.reason is not None or item.body is None:
            results.append(FileResult(item.name, "rejected", item.reason, item.check, path=item.path))
            continue
        try:
            meta = merge_meta(item.sidecar, flags, item.name)
            try:
                signed = vouch(item.body, item.name, meta, key, signed_at)
            except RunRejected as exc:
                folder_gpu = context.get(_folder_of(item))
                if not takes_folder_gpu(exc, meta, folder_gpu):
                    raise
                signed = vouch(item.body, item.name, {**meta, "gpu": folder_gpu[0]}, key, signed_at)
        except RunRejected as exc:
            results.append(FileResult(item.name, "rejected", exc.reason, exc.check, path=item.path))
            continue
        for i, envelope in enumerate(signed):
            name = item.name if len(signed) == 1 else f"{item.name} (run {i + 1} of {len(signed)})"
            envelopes.append(Received(name, envelope))
            slots.append(len(results))
            results.append(None)
    if log:
        for result in results:
            if result is not None:
                log(result.line())
    if envelopes:
        for slot, result in zip(slots, receive(envelopes, home, None, now=now, log=log)):
            results[slot] = result
    return [r for r in results if r is not None]


def summary(results: list[FileResult]) -> str:
    counts = {s: sum(1 for r in results if r.status == s) for s in ("accepted", "duplicate", "rejected")}
    runs = sum(len(r.runs) for r in results)
    return (f"{counts['accepted']} accepted ({runs} run{'s' if runs != 1 else ''}), "
            f"{counts['duplicate']} duplicate, {counts['rejected']} rejected")

"""The inbox sensor: files dropped in $BENCHWH_HOME/inbox/ are landed, then published.

Each evaluation takes the regular files at the top of the inbox (hidden files are skipped, so
write a file under a dot-name and rename it when complete), lands them exactly like
`benchwh runs add` (ingest/sources/runs/add.py), then moves each one away: accepted and duplicate
files to inbox/processed/, rejected ones to inbox/rejected/ with `<name>.reason` beside them,
every move and write relative to folders held open as directory descriptors, never through a
link (ingest/sources/runs/inbox.py); file names are written with control characters escaped.
A sidecar `<file>.meta.json` travels with its file. When anything new landed it requests a
run of the `refresh` job that fetches nothing (tag benchwh/sources=none): that run builds,
audits and publishes. The cursor counts batches and remembers the identity (name, size,
mtime) of the files of recent batches, so a file that could not be moved away is still
processed only once.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import dagster as dg

from ingest import config
from ingest.files import printable
from ingest.sources.runs.inbox import Folder, Inbox, InboxUnsafe
from orchestration.tags import fetch_tags

REMEMBER = 5000


def inbox_dir() -> Path:
    return config.home() / "inbox"


def _identity(path: Path, st: os.stat_result) -> str:
    return f"{path.name}|{st.st_size}|{st.st_mtime_ns}"


def _pending(inbox: Path, seen: set[str]) -> list[tuple[Path, str]]:
    from ingest.sources.runs.files import is_sidecar

    out = []
    for entry in sorted(os.scandir(inbox), key=lambda e: e.name):
        if entry.name.startswith(".") or entry.name.endswith(".reason") or is_sidecar(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # moved away while the folder was read
        if stat.S_ISDIR(st.st_mode):
            continue  # processed/, rejected/ and any folder a person made
        ident = _identity(Path(entry.path), st)
        if ident not in seen:
            out.append((Path(entry.path), ident))
    return out


def _move(path: Path, folder: Folder) -> tuple[Folder, str]:
    """inbox/<name> into `folder` (by directory descriptors: ingest/sources/runs/inbox.py)."""
    return folder, folder.take(path.name)


def _write_reason(target: tuple[Folder, str], text: str) -> None:
    folder, name = target
    folder.create(name + ".reason", text)


def write_report(target: tuple[Folder, str], results: list) -> None:
    """`<name>.report` beside a processed file: what `runs add` prints for it (trust, samples).
    The publish that follows appends where its runs went (complete_inbox_reports)."""
    folder, name = target
    lines = [printable(r.line()) for r in results]
    lines.append("after the next publish: names that did not resolve and whether the runs reach the site tables")
    folder.create(name + ".report", "\n".join(lines) + "\n")
    accepted = [{"name": r.name, "runs": list(r.runs)} for r in results if r.status == "accepted" and r.runs]
    if accepted:
        folder.inbox.folder(PENDING_REPORTS).create(
            name + ".json", json.dumps({"report": name + ".report", "accepted": accepted}))


PENDING_REPORTS = ".reports-pending"  # inbox/<this>/<file>.json: reports the next publish completes


def complete_inbox_reports(published: Path, log=print) -> int:
    """After a publish: append to each processed file's report what `runs add` says after its
    rebuild (unresolved names with the alias line that maps them, in the site tables or why not)."""
    from types import SimpleNamespace

    from publish.report import where_runs_went

    try:
        box = Inbox.open(config.home(), create=False)
    except (InboxUnsafe, OSError) as exc:
        log(f"inbox: {printable(str(exc))}")
        return 0
    if box is None:
        return 0
    done = 0
    with box:
        try:
            pending = box.folder(PENDING_REPORTS, create=False)
            if pending is None:
                return 0
            processed = box.folder("processed")
        except (InboxUnsafe, OSError) as exc:
            log(f"inbox: {printable(str(exc))}")
            return 0
        for marker in (n for n in pending.names() if n.endswith(".json")):
            try:
                doc = json.loads(pending.read_text(marker))
                lines = where_runs_went([SimpleNamespace(**r) for r in doc["accepted"]], published)
                processed.append(Path(doc["report"]).name, "".join(printable(line) + "\n" for line in lines))
                pending.remove(marker)
                done += 1
            except (OSError, ValueError, TypeError, KeyError) as exc:
                log(f"inbox: cannot complete the report of {printable(marker[:-5])}: {printable(str(exc))}")
    return done


def process_inbox(cursor: str | None, log=print) -> tuple[list, str, bool]:
    """Land the inbox's new files. Returns (results, new cursor, anything accepted)."""
    state = json.loads(cursor) if cursor else {"batches": 0, "seen": []}
    inbox = inbox_dir()
    try:
        box = Inbox.open(config.home())
    except (InboxUnsafe, OSError) as exc:
        log(f"inbox: {printable(str(exc))}")
        return [], json.dumps(state), False
    with box:
        try:
            processed, rejected_folder = box.folder("processed"), box.folder("rejected")
        except (InboxUnsafe, OSError) as exc:
            log(f"inbox: {printable(str(exc))}")
            return [], json.dumps(state), False
        return _process(processed, rejected_folder, inbox, state, log)


def _process(processed: Folder, rejected_folder: Folder, inbox: Path, state: dict, log) -> tuple[list, str, bool]:
    from ingest.locks import LockTimeout
    from ingest.sources.runs.add import receive
    from ingest.sources.runs.files import collect

    seen = set(state["seen"])
    pending = _pending(inbox, seen)
    if not pending:
        return [], json.dumps(state), False
    problem = _trusted_keys_problem()
    if problem:
        log(f"inbox: {problem}; files stay in the inbox until it is fixed")
        return [], json.dumps(state), False
    items = []
    for path, _ident in pending:
        items.extend(collect([path]))
    try:
        # a refresh holds the home: the files stay in the inbox for the next tick
        results = receive(items, config.home(), log=lambda line: log(printable(line)), lock_wait_s=0)
    except LockTimeout as exc:
        log(f"inbox: {exc}; the files stay for the next tick")
        return [], json.dumps(state), False
    # an archive gives one result per member: the archive goes where its worst member went
    verdict: dict[str, list] = {}
    for r in results:
        top = r.name.split("!", 1)[0]
        verdict.setdefault(top, []).append(r)
    for path, ident in pending:
        rs = verdict.get(path.name, [])
        rejected = [r for r in rs if r.status == "rejected"]
        try:
            if rejected or not rs:
                target = _move(path, rejected_folder)
                reasons = "\n".join(printable(f"{r.name}: {r.reason}") for r in rejected) or "nothing to import"
                _write_reason(target, reasons + "\n")
            else:
                target = _move(path, processed)
                write_report(target, rs)
        except (OSError, InboxUnsafe) as exc:
            log(f"inbox: cannot move {printable(path.name)}: {printable(str(exc))}")
        seen.add(ident)
    state["batches"] += 1
    state["seen"] = sorted(seen)[-REMEMBER:]
    accepted = any(r.status == "accepted" for r in results)
    return results, json.dumps(state), accepted


def _trusted_keys_problem() -> str | None:
    """A broken trusted_keys.json is reported, not raised (it used to end the sensor with SystemExit)."""
    from ingest.sources.runs import dsse

    try:
        dsse.load_trusted_keys(config.home())
    except (ValueError, OSError) as exc:
        return f"trusted_keys.json unusable: {' '.join(str(exc).split())}"
    return None


@dg.sensor(job_name="refresh", minimum_interval_seconds=30,
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Land run files dropped in $BENCHWH_HOME/inbox/, then build and publish (no fetching).")
def inbox_sensor(context: dg.SensorEvaluationContext):
    results, cursor, accepted = process_inbox(context.cursor, log=context.log.warning)
    context.update_cursor(cursor)
    if not results:
        return dg.SkipReason("inbox empty")
    counts = {s: sum(1 for r in results if r.status == s) for s in ("accepted", "duplicate", "rejected")}
    if not accepted:
        return dg.SkipReason(f"nothing new: {counts['duplicate']} duplicate, {counts['rejected']} rejected")
    batch = json.loads(cursor)["batches"]
    digest = hashlib.sha256("\n".join(sorted(r.name for r in results)).encode()).hexdigest()[:12]
    return dg.RunRequest(run_key=f"inbox-{batch}-{digest}", tags=fetch_tags([], offline=False))


sensors = [inbox_sensor]

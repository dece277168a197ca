"""Writes ingest/snapshots/localscore/: the offline recording of LocalScore, authored by us.

    .venv/bin/python -m scripts.recordings.localscore

Forty synthetic runs (tests/helpers/localscore_server.synthetic_runs: messy GPU/CPU spellings, models
named like the real site's, identical re-submissions) are served by the loopback fake of the site
and fetched by the real LocalScoreSource.fetch in two rounds: a backfill of the first 35, then an
incremental fetch once 5 more appeared. The stored responses become the recording, with
https://www.localscore.ai URLs and fixed fetch times, so offline builds are the same every day.
Deterministic: running it again writes the same bytes (a test checks).
"""
from __future__ import annotations

import json
import shutil
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from ingest.config import snapshots_dir
from ingest.http import PoliteClient
from ingest.raw_store import RawStore
from ingest.source import FetchContext
from ingest.sources.localscore import LocalScoreSource, result_id_from_url
from tests.helpers.localscore_server import FakeLocalScore, synthetic_runs

PUBLIC = "https://www.localscore.ai"
FIRST_ID = 900101  # far above real LocalScore ids, so a recorded run never shadows a real one
N_RUNS, N_FIRST_ROUND = 40, 35


def recording_runs() -> list[dict]:
    return synthetic_runs(N_RUNS, first_id=FIRST_ID, start=datetime(2026, 11, 20, 8, 0, 0), seed=2026,
                          resubmit_every=8, cycle_hardware=True)


def _stamp(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%d %H:%M:%S")


def write_recording(folder: Path) -> list[dict]:
    runs = recording_runs()
    # each round is fetched a while after its newest run was submitted
    round_times = [
        _stamp(runs[N_FIRST_ROUND - 1]["created_at"]).replace(minute=0, second=0) + timedelta(hours=2),
        _stamp(runs[-1]["created_at"]).replace(minute=0, second=0) + timedelta(hours=2),
    ]
    assert round_times[0] < _stamp(runs[N_FIRST_ROUND]["created_at"])
    source = LocalScoreSource()
    index: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp, FakeLocalScore(runs[:N_FIRST_ROUND]) as site:
        store = RawStore(Path(tmp) / "raw")
        for n, at in enumerate(round_times):
            if n == 1:
                site.add_runs(runs[N_FIRST_ROUND:])
            before = len(store.entries(source.name))
            ctx = FetchContext(source=source.name, base_url=site.url, client=PoliteClient(max_rps=1000),
                               store=store, parser_version=source.parser_version, log=lambda msg: None)
            source.fetch(ctx)
            for k, entry in enumerate(store.entries(source.name)[before:]):
                rid = result_id_from_url(entry.url)
                name = (f"result_{rid}.html" if rid is not None
                        else f"api_results_{at:%Y-%m-%dT%H%M}_page{entry.url.rsplit('=', 1)[-1]}.json")
                index.append({
                    "url": PUBLIC + entry.url[len(site.url):],
                    "fetched_at": (at + timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "status": entry.status,
                    "headers": {"content-type": "text/html; charset=utf-8" if rid is not None
                                else "application/json; charset=utf-8"},
                    "file": name,
                    "_body": store.read(entry),
                })
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for rec in index:
        (folder / rec["file"]).write_bytes(rec.pop("_body"))
    (folder / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return index


def main() -> None:
    folder = snapshots_dir() / "localscore"
    index = write_recording(folder)
    print(f"wrote {len(index)} recorded responses to {folder}")


if __name__ == "__main__":
    main()

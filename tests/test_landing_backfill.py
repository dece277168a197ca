"""Backfills split by day of fetch (issue 18): two partitions of the `backfill_landing` job, run at
once by two worker processes on the same warehouse home, leave the ledger, landing rows and
quarantine that one serial landing of the same raw store leaves."""
from __future__ import annotations

import json
from collections import Counter
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from benchmarks import generate
from ingest.landing import Lander
from ingest.raw_store import RawStore
from ingest.source import load_sources
from tests.helpers.pipeline import benchwh_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("localscore", "runs")

DRIVER = '''
import sys
from orchestration.definitions import defs
result = defs.resolve_job_def("backfill_landing").execute_in_process(partition_key=sys.argv[1], raise_on_error=False)
print("ok" if result.success else "failed")
'''


def seed(home: Path) -> list[str]:
    """A generated raw store of LocalScore pages and signed run files, cut to two days of fetch."""
    plan = generate.Plan.for_scale(0.0003)
    store = RawStore(home / "raw")
    start = generate.END - timedelta(days=plan.days)
    with store.batched():
        generate.write_localscore(store, plan, start)
        generate.write_runs(store, home, plan, start)
    per_day = Counter(e.fetched_at[:10] for s in SOURCES for e in store.payloads(s))
    kept = sorted(day for day, _ in per_day.most_common(2))
    assert len(kept) == 2, per_day
    for s in SOURCES:
        store.remove_entries(s, lambda e: e.fetched_at[:10] not in kept)
    return kept


def ledger_entries(home: Path, source: str) -> dict[str, dict]:
    """Each payload's ledger entry, but for `files`: which file a row went to follows batching."""
    out = {}
    for path in (home / "landing" / source / "_ledger").glob("*.json"):
        doc = json.loads(path.read_text())
        doc.pop("files")
        out[path.name] = doc
    return out


def rows(home: Path, pattern: str) -> list[tuple]:
    files = [p for p in (home / "landing").glob(pattern) if p.name != "_schema.parquet"]
    if not files:
        return []
    con = duckdb.connect()
    try:
        listed = ", ".join(f"'{p}'" for p in files)
        return sorted(con.execute(f"SELECT * FROM read_parquet([{listed}], union_by_name=true)").fetchall(), key=repr)
    finally:
        con.close()


@pytest.fixture(scope="module")
def homes(tmp_path_factory):
    root = tmp_path_factory.mktemp("backfill")
    serial, parted = root / "serial", root / "parted"
    days = seed(serial)
    shutil.copytree(serial, parted)

    sources = load_sources()
    lander = Lander(serial / "landing", RawStore(serial / "raw"), log=lambda line: None)
    saved = os.environ.get("BENCHWH_HOME")
    os.environ["BENCHWH_HOME"] = str(serial)  # the runs source reads its home's trusted keys
    try:
        for name in SOURCES:  # one serial landing of the whole raw store
            lander.land_pending(sources[name])
    finally:
        if saved is None:
            os.environ.pop("BENCHWH_HOME")
        else:
            os.environ["BENCHWH_HOME"] = saved

    env = benchwh_env(parted, DAGSTER_HOME=str(root / "dagster"))
    workers = [subprocess.Popen([sys.executable, "-c", DRIVER, day], cwd=PROJECT_ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for day in days]
    for proc in workers:
        out, err = proc.communicate(timeout=800)
        assert proc.returncode == 0 and out.strip().endswith("ok"), err[-3000:]
    return serial, parted, days


def test_each_partition_landed_its_day(homes):
    _, parted, days = homes
    landed_days = {e["fetched_at"][:10] for s in SOURCES for e in ledger_entries(parted, s).values()}
    assert landed_days == set(days)


def test_two_partitions_leave_the_ledger_of_one_serial_landing(homes):
    serial, parted, _ = homes
    for source in SOURCES:
        want = ledger_entries(serial, source)
        assert want, source
        assert ledger_entries(parted, source) == want, source


def test_two_partitions_land_the_same_rows_and_quarantine(homes):
    serial, parted, _ = homes
    for source in SOURCES:
        total = 0
        for entity in sorted(p.name for p in (serial / "landing" / source).iterdir()
                             if p.is_dir() and not p.name.startswith("_")):
            got, want = rows(parted, f"{source}/{entity}/*.parquet"), rows(serial, f"{source}/{entity}/*.parquet")
            assert got == want, f"{source}/{entity}"
            total += len(want)
        assert total, source
        got, want = rows(parted, f"_quarantine/{source}/*.parquet"), rows(serial, f"_quarantine/{source}/*.parquet")
        assert got == want, source
    from ingest.integrity import check_home
    assert check_home(parted, list(SOURCES)) == []

"""A backlog lands in batches (ingest/landing/lander.py): the same rows, quarantine and ledger as landing
each payload alone, and a payload failing as a whole still stops the source where it stands."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import duckdb
import pytest

from ingest.landing import SMALL_LANDING
from ingest.source import SourceFailed
from ingest.sources.openrouter import OpenRouterSource
from tests.helpers.landing import URL, snapshot, store_with

N = SMALL_LANDING + 6  # more than a small landing: the batch path


def rows(glob: Path, order: str) -> list[tuple]:
    con = duckdb.connect()
    try:
        return con.execute(f"select * exclude (quarantined_at) from read_parquet('{glob}', union_by_name=true) "
                           f"order by {order}" if "_quarantine" in str(glob) else
                           f"select * from read_parquet('{glob}', union_by_name=true) order by {order}").fetchall()
    finally:
        con.close()


def test_batched_landing_equals_landing_payload_by_payload(tmp_path):
    bodies = [snapshot(day) for day in range(1, N + 1)]
    _, batched = store_with(tmp_path / "a", bodies)
    store_b, single = store_with(tmp_path / "b", bodies)
    out_a = batched.land_pending(OpenRouterSource())
    out_b = [single.land_payload(OpenRouterSource(), e) for e in single.pending("openrouter")]
    # the same verdicts and counts; only the landing files differ (one per batch, one per payload)
    same = lambda o: {k: v for k, v in asdict(o).items() if k != "files"}  # noqa: E731
    assert [same(o) for o in out_a] == [same(o) for o in out_b]
    assert any(o.quarantined["models"] for o in out_a)
    for o in out_a:
        assert o.landed["models"] + o.quarantined["models"] == o.parsed["models"]
    files_a = [p.name for p in (tmp_path / "a" / "landing" / "openrouter" / "models").glob("[0-9a-f]*.parquet")]
    assert len(files_a) == 1 and files_a[0].endswith(f"-{N}.parquet")  # one file for the batch
    landed = "landing/openrouter/models/[0-9a-f]*.parquet"
    order = "_raw_sha256, _record_index"
    assert rows(tmp_path / "a" / landed, order) == rows(tmp_path / "b" / landed, order)
    quarantined = "landing/_quarantine/openrouter/*.parquet"
    qorder = "raw_sha256, record_index, column_name, check_name"
    got = rows(tmp_path / "a" / quarantined, qorder)
    assert got == rows(tmp_path / "b" / quarantined, qorder)
    assert {r[6] for r in got} >= {"multiple_fields_uniqueness", "greater_than_or_equal_to(0)"}
    # per payload quarantine files, as before
    for o in out_a:
        qfile = tmp_path / "a" / "landing" / "_quarantine" / "openrouter" / f"{o.sha256}.parquet"
        assert qfile.exists() == (o.quarantined["models"] > 0)


def test_a_failing_payload_in_a_batch_lands_those_before_it_and_leaves_the_rest_pending(tmp_path):
    bodies = [snapshot(day) for day in range(1, N + 1)]
    bodies[9] = snapshot(10, n_models=2)  # fewer than half the previous snapshot's rows
    store, lander = store_with(tmp_path, bodies)
    with pytest.raises(SourceFailed) as err:
        lander.land_pending(OpenRouterSource())
    assert "fewer than half" in str(err.value)
    outcomes = lander.outcomes("openrouter")
    assert [o.status for o in outcomes] == ["landed"] * 9 + ["failed"]
    assert len(lander.pending("openrouter")) == N - 10
    landed = rows(tmp_path / "landing/openrouter/models/[0-9a-f]*.parquet", "_raw_sha256, _record_index")
    shas = {r[-3] for r in landed}
    assert shas == {o.sha256 for o in outcomes[:9]}


def test_ledger_log_reads_the_same_outcomes_as_the_ledger_files(tmp_path):
    _, lander = store_with(tmp_path, [snapshot(day) for day in range(1, N + 1)])
    landed = lander.land_pending(OpenRouterSource())
    folder = lander.ledger_dir("openrouter")
    files = sorted((json.loads(p.read_text()) for p in folder.glob("*.json")),
                   key=lambda d: (d["fetched_at"], d["sha256"]))
    assert (folder / "_outcomes.jsonl").exists()
    assert [asdict(o) for o in lander.outcomes("openrouter")] == files == [asdict(o) for o in landed]
    # without the log (an older warehouse) the files are read, and the log is written again
    (folder / "_outcomes.jsonl").unlink()
    assert [asdict(o) for o in lander.outcomes("openrouter")] == files
    assert len((folder / "_outcomes.jsonl").read_text().splitlines()) == N
    # a ledger file removed by hand: its payload is pending again, and no longer an outcome
    (folder / f"{landed[0].sha256}.json").unlink()
    assert [o.sha256 for o in lander.outcomes("openrouter")] == [o.sha256 for o in landed[1:]]
    assert [e.sha256 for e in lander.pending("openrouter")] == [landed[0].sha256]


def test_a_batch_a_crash_left_unfinished_lands_once(tmp_path):
    """Crash after a batch's Parquet file and some of its ledger entries: nothing lands twice."""
    store, lander = store_with(tmp_path, [snapshot(day) for day in range(1, N + 1)])
    source = OpenRouterSource()
    lander.land_pending(source)
    ledger = lander.ledger_dir("openrouter")
    first = next(store.payloads("openrouter")).sha256
    batch_files = list(lander.entity_dir("openrouter", "models").glob(f"{first}-*.parquet"))
    assert len(batch_files) == 1
    # the crash: entries are written last payload first, so the first two are still missing
    second = list(store.payloads("openrouter"))[1].sha256
    for sha in (first, second):
        (ledger / f"{sha}.json").unlink()
    # new payloads arrive before the next landing, so the next batch differs from the crashed one
    store.put("openrouter", snapshot(N + 1), url=URL, fetched_at="2026-12-01T06:00:00Z")
    lander.land_pending(source)
    glob = str(lander.entity_dir("openrouter", "models") / "*.parquet")
    dupes = duckdb.sql(f"""SELECT count(*) FROM (SELECT _raw_sha256, _record_index, count(*) AS n
                           FROM read_parquet('{glob}') GROUP BY ALL HAVING n > 1)""").fetchall()[0][0]
    assert dupes == 0
    landed = {r[0] for r in duckdb.sql(f"SELECT DISTINCT _raw_sha256 FROM read_parquet('{glob}')").fetchall()}
    assert {e.sha256 for e in store.payloads("openrouter")} <= landed | {
        o.sha256 for o in lander.outcomes("openrouter") if o.status != "landed"}
    assert not batch_files[0].exists()  # the unfinished batch was replaced
    assert len(list(ledger.glob("*.json"))) == N + 1  # every payload has its verdict once more

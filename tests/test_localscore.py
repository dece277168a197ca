"""LocalScore source against a loopback fake of the site in its real API and page shapes."""
from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
import requests

from ingest.http import PoliteClient
from ingest.landing import Lander, PayloadOutcome, landed_values_reader
from ingest.raw_store import RawEntry, RawStore
from ingest.source import FetchContext, PayloadRejected, SourceFailed
from ingest.sources.localscore import LocalScoreSource, parse_test_name, utc_naive
from tests.helpers.localscore_server import FakeLocalScore, load_sqlite_runs, render_result_page, synthetic_runs


class Warehouse:
    """A raw store + landing in a temp folder, and one fetch-then-land step like a refresh."""

    def __init__(self, root: Path, page_limit: int = 100):
        self.store = RawStore(root / "raw")
        self.landing = root / "landing"
        self.lander = Lander(self.landing, self.store, log=lambda msg: None)
        self.source = LocalScoreSource()
        # the real API serves up to 100 runs a page; tests ask for 10 to page with few runs
        self.source.page_limit = page_limit
        self.lander.ensure_layout(self.source)

    def fetch(self, site: FakeLocalScore) -> FetchContext:
        client = PoliteClient(max_rps=1000, retries=1, backoff_base=0.01, backoff_max=0.02)
        ctx = FetchContext(source="localscore", base_url=site.url, client=client,
                           store=self.store, parser_version=self.source.parser_version,
                           log=lambda msg: None, landed_values=landed_values_reader(self.landing, "localscore"))
        self.source.fetch(ctx)
        return ctx

    def refresh(self, site: FakeLocalScore):
        self.fetch(site)
        return self.lander.land_pending(self.source)

    def query(self, entity: str, sql: str):
        glob = str(self.landing / "localscore" / entity / "*.parquet")
        con = duckdb.connect()
        try:
            con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{glob}', union_by_name=true)")
            return con.execute(sql).fetchall()
        finally:
            con.close()


@pytest.fixture
def wh(tmp_path) -> Warehouse:
    return Warehouse(tmp_path, page_limit=10)


def entry(url: str) -> RawEntry:
    return RawEntry(source="localscore", url=url, fetched_at="2026-11-30T00:00:00Z", status=200,
                    sha256="0" * 64, bytes=0, ext="html", path="x")


# ---- acceptance --------------------------------------------------------------------------------

def test_backfill_lands_every_run_and_all_its_tests(wh):
    runs = synthetic_runs(23, resubmit_every=9)
    with FakeLocalScore(runs) as site:
        outcomes = wh.refresh(site)
        assert site.api_pages_requested() == [1, 2, 3]  # 10 + 10 + 3, the short page ends it
        assert [r.query["limit"] for r in site.api_requests()] == [["10"]] * 3
        assert sorted(site.result_ids_requested(), key=int) == [str(r["id"]) for r in runs]
    assert all(o.status == "landed" for o in outcomes)
    assert wh.query("runs", "SELECT count(DISTINCT run_id) FROM t")[0][0] == 23
    per_run = wh.query("tests", "SELECT run_id, count(*), count(DISTINCT test_name) FROM t GROUP BY run_id")
    assert len(per_run) == 23 and {(n, d) for _, n, d in per_run} == {(9, 9)}


def test_after_five_new_runs_only_first_pages_and_five_result_pages_are_requested(wh):
    runs = synthetic_runs(25)
    newer = synthetic_runs(5, first_id=26, start=datetime(2026, 12, 20), seed=11)
    with FakeLocalScore(runs) as site:
        wh.refresh(site)
        site.add_runs(newer)
        site.clear_log()
        wh.refresh(site)
        # page 1 holds the 5 new runs and 5 known ones, page 2 only known ones: stop there
        assert site.api_pages_requested() == [1, 2]
        assert sorted(site.result_ids_requested()) == sorted(str(r["id"]) for r in newer)
        site.clear_log()
        wh.refresh(site)  # nothing new: one page, no result page
        assert site.api_pages_requested() == [1]
        assert site.result_ids_requested() == []
    assert wh.query("tests", "SELECT count(DISTINCT run_id), count(*) FROM t")[0] == (30, 30 * 9)


def test_a_run_shifting_to_the_next_page_while_paging_is_not_duplicated(wh):
    runs = synthetic_runs(25)
    late = synthetic_runs(1, first_id=999, start=datetime(2027, 1, 5), seed=3)
    with FakeLocalScore(runs) as site:
        def arrive(page, limit):
            if page == 1 and not site.by_id("999"):
                site.add_runs(late)  # everything moves one place down: page 2 repeats run 16
        site.after_api_page = arrive
        wh.refresh(site)
        assert site.api_pages_requested() == [1, 2, 3]
        asked = site.result_ids_requested()
        assert len(asked) == len(set(asked)) == 25
        site.clear_log()
        wh.refresh(site)
        assert site.result_ids_requested() == ["999"]
    assert wh.query("tests", "SELECT count(*), count(DISTINCT (run_id, test_name)) FROM t")[0] == (26 * 9, 26 * 9)


def test_a_layout_change_on_result_pages_fails_the_source(wh):
    with FakeLocalScore(synthetic_runs(8)) as site:
        wh.refresh(site)
        site.layout = "app"
        site.add_runs(synthetic_runs(5, first_id=9, start=datetime(2026, 12, 20), seed=5))
        with pytest.raises(SourceFailed, match=r"5 of 5 new result pages rejected"):
            wh.refresh(site)
    reasons = duckdb.sql(
        f"SELECT DISTINCT failure_value FROM read_parquet('{wh.landing}/_quarantine/localscore/*.parquet')"
    ).fetchall()
    assert any("__NEXT_DATA__" in r[0] for r in reasons)


def test_a_few_missing_results_are_quarantined_without_failing(wh):
    runs = synthetic_runs(21)
    with FakeLocalScore(runs) as site:
        site.missing = {"17"}  # listed by the API, "Result not found" on its page: 1 of 21 (4.8 %)
        outcomes = wh.refresh(site)
    rejected = [o for o in outcomes if o.status == "rejected"]
    assert [o.url.rsplit("/", 1)[-1] for o in rejected] == ["17"]
    assert "Result not found" in rejected[0].reason
    assert wh.query("tests", "SELECT count(DISTINCT run_id) FROM t")[0][0] == 20


def outcome(url: str, status: str = "landed") -> PayloadOutcome:
    return PayloadOutcome(sha256=url, fetched_at="2026-11-30T00:00:00Z", url=url, status=status,
                          reason=None if status == "landed" else "Result not found")


def test_more_than_five_percent_rejected_result_pages_fail_api_pages_do_not_count():
    base = "https://www.localscore.ai"
    pages = [outcome(f"{base}/result/{i}") for i in range(37)]
    pages += [outcome(f"{base}/result/{i}", "rejected") for i in range(37, 40)]  # 3 of 40 = 7.5 %
    api = [outcome(f"{base}/api/results?sortDirection=desc&limit=100&page={p}") for p in (1, 2)]
    with pytest.raises(SourceFailed, match="3 of 40"):
        LocalScoreSource().validate_payloads(api + pages)
    LocalScoreSource().validate_payloads(api + pages[:37] + pages[-1:])  # 1 of 38: fine
    LocalScoreSource().validate_payloads(api + [outcome(f"{base}/api/results?page=3", "rejected")])


def test_a_result_page_failing_to_fetch_is_asked_for_again_next_time(wh):
    with FakeLocalScore(synthetic_runs(21)) as site:
        site.broken = {"5"}  # 1 of 21 answers 500: logged, not stored, the rest lands
        wh.refresh(site)
        assert wh.query("tests", "SELECT count(DISTINCT run_id) FROM t")[0][0] == 20
        site.broken = set()
        site.clear_log()
        wh.refresh(site)
        assert site.result_ids_requested() == ["5"]
    assert wh.query("tests", "SELECT count(DISTINCT run_id) FROM t")[0][0] == 21


def test_many_result_pages_failing_to_fetch_fail_the_source(wh):
    with FakeLocalScore(synthetic_runs(12)) as site:
        site.broken = {"2", "7"}
        with pytest.raises(SourceFailed, match="2 of 12 result pages failed to fetch"):
            wh.fetch(site)


def test_unchanged_first_page_answered_304_stops_paging(wh):
    with FakeLocalScore(synthetic_runs(15), etags=True) as site:
        wh.refresh(site)
        site.clear_log()
        wh.refresh(site)
        assert site.api_pages_requested() == [1]
        assert site.result_requests() == []
    statuses = [e.status for e in wh.store.entries("localscore") if e.url.endswith("&page=1")]
    assert statuses == [200, 304]


def test_a_run_listed_but_never_fetched_gets_its_result_page_next_time(wh):
    runs = synthetic_runs(12)
    with FakeLocalScore(runs) as site:
        # a fetch cut short: the API page is stored and landed, no result page fetched
        page_url = site.url + "/api/results?sortDirection=desc&limit=100&page=1"
        wh.store.put("localscore", requests.get(page_url, timeout=5).content, url=page_url)
        wh.lander.land_pending(wh.source)
        wh.refresh(site)
        assert sorted(site.result_ids_requested(), key=int) == [str(r["id"]) for r in runs]


def test_sample_database_runs_and_tests_land_with_the_database_values(wh, shared_data):
    import sqlite3

    db = shared_data / "localscore" / "localscore_site_sample.sqlite"
    runs = load_sqlite_runs(db)
    assert len(runs) == 13
    with FakeLocalScore(runs) as site:
        outcomes = wh.refresh(site)
    assert all(o.status == "landed" for o in outcomes)

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    expected_tests = {
        (r[0], r[1]): r[2:] for r in con.execute(
            "SELECT benchmark_run_id, name, n_prompt, n_gen, prompt_tps, gen_tps, ttft_ms, power_watts, avg_time_ms "
            "FROM test_results")
    }
    expected_runs = {
        r[0]: r[1:] for r in con.execute(
            "SELECT br.id, br.created_at, a.name, a.type, a.memory_gb, m.name, mv.quantization, m.params, "
            "rt.name, rt.version, rt.commit_hash, s.cpu_name, s.ram_gb, s.kernel_type, "
            "br.avg_prompt_tps, br.avg_gen_tps, br.avg_ttft_ms, br.performance_score "
            "FROM benchmark_runs br JOIN accelerators a ON a.id = br.accelerator_id "
            "JOIN model_variants mv ON mv.id = br.model_variant_id JOIN models m ON m.id = mv.model_id "
            "JOIN runtimes rt ON rt.id = br.runtime_id JOIN benchmark_systems s ON s.id = br.system_id")
    }
    con.close()
    assert len(expected_tests) == 117

    got_tests = {
        (r[0], r[1]): r[2:] for r in wh.query(
            "tests", "SELECT run_id, test_name, n_prompt, n_gen, prompt_tps, gen_tps, ttft_ms, power_watts, "
                     "avg_time_ms FROM t")
    }
    assert got_tests.keys() == expected_tests.keys()
    for key, want in expected_tests.items():
        got = got_tests[key]
        assert got[:2] == want[:2], key
        assert all(math.isclose(g, w, rel_tol=1e-12) for g, w in zip(got[2:], want[2:])), key

    got_runs = {
        r[0]: r[1:] for r in wh.query(
            "runs", "SELECT run_id, strftime(created_at, '%Y-%m-%d %H:%M:%S'), accelerator_name, "
                    "accelerator_type, accelerator_memory_gb, model_name, model_quant, model_params, "
                    "runtime_name, runtime_version, runtime_commit, cpu_name, ram_gb, kernel_type, "
                    "avg_prompt_tps, avg_gen_tps, avg_ttft_ms, performance_score FROM t")
    }
    assert got_runs == expected_runs


# ---- parsing details ---------------------------------------------------------------------------

def test_test_names_give_prompt_and_generation_tokens():
    assert parse_test_name("pp1024+tg16") == (1024, 16)
    assert parse_test_name("pp16+tg1536") == (16, 1536)
    assert parse_test_name("tg128") == (0, 128)
    assert parse_test_name("pp512") == (512, 0)
    assert parse_test_name("warmup") == (None, None)


def test_times_become_naive_utc():
    assert utc_naive("2025-03-19 21:50:27") == datetime(2025, 3, 19, 21, 50, 27)
    assert utc_naive("2025-03-19T21:50:27.000Z") == datetime(2025, 3, 19, 21, 50, 27)
    assert utc_naive("2025-03-19T23:50:27+02:00") == datetime(2025, 3, 19, 21, 50, 27)


def test_missing_n_prompt_is_read_from_the_test_name_and_decimal_strings_are_numbers():
    run = synthetic_runs(1)[0]
    for t in run["results"]:
        del t["n_prompt"], t["n_gen"]
        t["gen_tps"] = str(t["gen_tps"])  # the Postgres era served decimals as strings
    frames = LocalScoreSource().parse(render_result_page(run, "1").encode(), entry("https://x/result/1"))
    tests = frames["tests"]
    assert list(tests["n_prompt"]) == [1024, 4096, 2048, 2048, 1024, 1280, 384, 64, 16]
    assert tests["gen_tps"].astype(float).gt(0).all()


@pytest.mark.parametrize("page, reason", [
    (render_result_page(None, "7"), "Result not found"),
    (render_result_page(synthetic_runs(7)[-1], "7", layout="app"), "__NEXT_DATA__"),
    ('<html><script id="__NEXT_DATA__" type="application/json">{"props":{}}</script></html>', "pageProps"),
    ('<html><script id="__NEXT_DATA__" type="application/json">{"props":{"pageProps":{"result":'
     '{"id":7,"model":{"name":"m"},"accelerator":"a"}}}}</script></html>', "results"),
    ('<html><script id="__NEXT_DATA__" type="application/json">{"props":</script></html>', "not JSON"),
])
def test_unreadable_result_pages_are_rejected_with_a_reason(page, reason):
    with pytest.raises(PayloadRejected, match=reason):
        LocalScoreSource().parse(page.encode(), entry("https://www.localscore.ai/result/7"))


def test_a_result_page_for_another_run_is_rejected():
    page = render_result_page(synthetic_runs(1)[0], "1")
    with pytest.raises(PayloadRejected, match="holds run"):
        LocalScoreSource().parse(page.encode(), entry("https://www.localscore.ai/result/2"))


def test_an_empty_api_page_is_rejected_not_failed():
    with pytest.raises(PayloadRejected, match="no runs"):
        LocalScoreSource().parse(b"[]", entry("https://www.localscore.ai/api/results?page=3"))


def test_impossible_values_are_quarantined_row_by_row(wh):
    runs = synthetic_runs(3)
    runs[1]["results"][2]["gen_tps"] = -5.0
    runs[2]["results"][0]["ttft_ms"] = float("inf")
    with FakeLocalScore(runs) as site:
        outcomes = wh.refresh(site)
    assert sum(o.quarantined.get("tests", 0) for o in outcomes) == 2
    assert wh.query("tests", "SELECT count(*) FROM t")[0][0] == 3 * 9 - 2

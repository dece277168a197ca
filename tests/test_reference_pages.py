"""The reference pages (../shared/reference-pages/), section by section, from the published tables alone.

1. Signed run files shaped like the Llama 3.2 3B page (two packagers' Q4_K_M with different sizes,
   a 2x T4 machine, an RTX 3080 Ti, an Apple M4, three contributors, recall walks that stop for each
   reason, capabilities) are added with the real `runs add` code and built by the real dbt project.
2. The real LocalScore TSV (../shared/data/localscore, skipped without it): Apple GPU-core bins and
   LocalScore's own run averages on the Llama 3.2 1B page.
3. The offline warehouse: carbon rows check out by hand, every unresolved name is audited, and no
   published size column mixes 1e9 and 2^30 bytes.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

from ingest.landing import Lander
from ingest.raw_store import RawStore
from ingest.source import load_sources
from ingest.sources import localscore  # module import: pytest would collect test_rows / LocalScoreTestsSchema
from ingest.sources.runs import dsse
from ingest.sources.runs.add import add_paths
from ingest.sources.runs.payload import build_payload, payload_bytes
from tests.helpers.dbt_build import dbt_build, query
from tests.helpers.keys import trust

PAGE_SELECT = ["+model_builds", "+model_contributors", "+model_fits_on", "+model_context_recall",
               "+model_capabilities", "+dim_machine", "+fct_speed_summary"]
MODEL = "llama-3.2-3b-instruct"
BARTOWSKI = "bartowski/Llama-3.2-3B-Instruct-GGUF"
UNSLOTH = "unsloth/Llama-3.2-3B-Instruct-GGUF"
Q4 = "Llama-3.2-3B-Instruct-Q4_K_M.gguf"
T4 = {"gpu": "Tesla T4", "gpu_count": 2, "gpu_memory_gb": 15, "cpu": "Intel Xeon CPU @ 2.20GHz 4-Core Processor",
      "ram_gb": 31, "os": "Linux"}
RTX = {"gpu": "NVIDIA GeForce RTX 3080 Ti", "gpu_memory_gb": 12, "cpu": "AMD Ryzen 7 5800X 16-Core Processor",
       "ram_gb": 16, "os": "Windows 11"}
M4 = {"gpu": "Apple M4", "gpu_memory_gb": 16, "cpu": "Apple M4 4P+6E", "ram_gb": 16, "os": "Darwin 24.1.0"}
SIZES = (4096, 8192, 16384, 32768, 65536, 131072)


def run(machine: dict, repo: str, file: str, quant: str, size: int, gen_tps: list[float], *,
        recall=None, stopped=None, capabilities=None, peak=None, day=1) -> dict:
    return build_payload(
        machine=machine, engine={"name": "ollama", "version": "0.6.2"},
        model={"name": "Llama 3.2 3B Instruct", "repo": repo, "file": file, "quant": quant, "file_size_bytes": size},
        protocol={"name": "gen-1k", "prompt_tokens": 512, "gen_tokens": 1024, "sampling": {"temperature": 0}},
        samples=[{"prompt_tokens": 512, "gen_tokens": 1024, "ttft_ms": 50.0, "gen_tps": g} for g in gen_tps],
        memory={"peak_bytes": peak} if peak else None,
        context_recall=recall, context_recall_stopped=stopped, capabilities=capabilities,
        created_at=f"2026-11-{day:02d}T10:00:00Z")


def recalled(*sizes: int, lost: int | None = None) -> list[dict]:
    rows = [{"context_tokens": s, "recalled": True} for s in sizes]
    return rows + ([{"context_tokens": lost, "recalled": False}] if lost else [])


@pytest.fixture(scope="module")
def page_build(tmp_path_factory):
    work = tmp_path_factory.mktemp("refpage")
    home = work / "warehouse"
    home.mkdir()
    keys = {}
    for name in ("Gram", "Kunal Hindocha", "nitin singh"):
        path = work / f"{name.split()[0].lower()}.pem"
        dsse.write_private_key(path)
        keys[name] = dsse.load_private_key(path)
        trust(home, keys[name], name)
    files = {
        # Gram's 2x T4: bartowski's Q4_K_M recalled at every size up to its trained 128K
        "gram-q4": ("Gram", run(T4, BARTOWSKI, Q4, "Q4_K_M", 2_019_377_696, [86.9, 85.0, 88.0],
                               recall=recalled(*SIZES),
                               stopped={"reason": "reached_trained_context", "at_tokens": 131072},
                               capabilities=[{"name": "tool_calling", "passed": True},
                                             {"name": "json_mode", "passed": True}],
                               peak=2_600_000_000)),
        # Kunal's RTX 3080 Ti: unsloth's Q4_K_M (another file size) lost the needle at 4K ...
        "kunal-q4": ("Kunal Hindocha", run(RTX, UNSLOTH, Q4, "Q4_K_M", 2_019_377_792, [203.9, 200.0, 206.0],
                                          recall=recalled(lost=4096), stopped={"reason": "forgot", "at_tokens": 4096},
                                          capabilities=[{"name": "tool_calling", "passed": False}], day=2)),
        # ... and its F16 could not hold a 32K prompt on 12 GB
        "kunal-f16": ("Kunal Hindocha", run(RTX, UNSLOTH, "Llama-3.2-3B-Instruct-F16.gguf", "F16", 6_433_688_352,
                                           [94.9, 93.0, 95.5], recall=recalled(4096, 8192, 16384),
                                           stopped={"reason": "could_not_hold", "at_tokens": 32768}, day=3)),
        # nitin's Apple M4, an older file that does not say why its walk stopped
        "nitin-iq1": ("nitin singh", run(M4, "MaziyarPanahi/Llama-3.2-3B-Instruct-GGUF",
                                         "Llama-3.2-3B-Instruct.IQ1_S.gguf", "IQ1_S", 1_000_000_000, [45.7, 44.0, 46.1],
                                         recall=recalled(lost=4096), day=4)),
    }
    paths = []
    for stem, (who, doc) in files.items():
        path = work / "inbox" / f"{stem}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(dsse.sign_payload(payload_bytes(doc), keys[who])))
        paths.append(path)
    results = add_paths(paths, home, log=lambda m: None)
    assert [r.status for r in results] == ["accepted"] * 4
    lander = Lander(home / "landing", RawStore(home / "raw"), log=lambda m: None)
    for source in load_sources().values():  # every source's empty typed files: the project reads them all
        lander.ensure_layout(source)
    return dbt_build(home, work, PAGE_SELECT, "--indirect-selection", "cautious")


def rows(db: Path, sql: str) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()


def test_two_packagers_q4_k_m_are_two_builds_with_their_own_speed_and_size(page_build):
    builds = {r["quantizer"]: r for r in rows(page_build, f"""
        select * from site.model_builds where model_id = '{MODEL}' and quant = 'Q4_K_M' and n_machines > 0""")}
    assert set(builds) == {"bartowski", "unsloth"}
    assert builds["bartowski"]["best_gen_tps"] == 86.9 and builds["unsloth"]["best_gen_tps"] == 203.9
    assert builds["bartowski"]["file_size_bytes"] == 2_019_377_696
    assert builds["unsloth"]["file_size_bytes"] == 2_019_377_792
    assert builds["bartowski"]["repo"] == BARTOWSKI.lower() and builds["bartowski"]["file_name"] == Q4
    assert builds["bartowski"]["memory_bytes"] == 2_600_000_000  # its measured peak
    assert builds["bartowski"]["context_proved_tokens"] == 131072
    assert builds["unsloth"]["context_proved_tokens"] is None and builds["unsloth"]["engine"] == "ollama"
    # the leaderboard facts keep them apart too
    summary = rows(page_build, f"select build_id from marts.fct_speed_summary where model_id = '{MODEL}' and quant = 'Q4_K_M'")
    assert len({r["build_id"] for r in summary}) == 2


def test_machine_headline_fields(page_build):
    machines = {r["hardware_id"]: r for r in rows(page_build, "select * from marts.dim_machine")}
    t4 = machines["nvidia-t4"]
    assert (t4["gpu_count"], t4["machine_kind"], t4["usable_memory_kind"]) == (2, "2× NVIDIA T4", "card")
    assert t4["usable_memory_bytes"] == 2 * 15 * 2**30 and t4["ram_bytes"] == 31 * 2**30
    rtx = machines["nvidia-rtx-3080-ti"]
    assert rtx["headline_label"] == "Windows · NVIDIA 12 GB · 16 CPUs · 16 GB RAM"
    assert (rtx["os"], rtx["cpu_cores"], rtx["gpu_memory_bytes"]) == ("Windows 11", 16, 12 * 2**30)
    m4 = machines["apple-m4"]
    assert (m4["machine_kind"], m4["usable_memory_kind"], m4["usable_memory_bytes"]) == ("Apple M4", "ram", 16 * 2**30)
    assert m4["cpu_cores"] == 10
    # every measurement is linked to its machine
    [(unlinked,)] = query(page_build, """
        select count(*) from marts.fct_speed_measurements m
        left join marts.dim_machine d using (machine_id) where d.machine_id is null""")
    assert unlinked == 0


def test_measured_by_rows(page_build):
    got = {r["contributor"]: (r["n_runs"], r["n_machines"]) for r in rows(
        page_build, f"select * from site.model_contributors where model_id = '{MODEL}'")}
    assert got == {"Gram": (1, 1), "Kunal Hindocha": (2, 1), "nitin singh": (1, 1)}
    # every signed measurement carries its key and contributor
    [(missing,)] = query(page_build, """
        select count(*) from marts.fct_speed_measurements where trust = 'signed' and (keyid is null or contributor is null)""")
    assert missing == 0


def test_recall_table_per_machine_and_build_with_stop_reasons(page_build):
    table = rows(page_build, f"""
        select r.*, b.quantizer from site.model_context_recall r join marts.dim_model_build b using (build_id)
        where r.model_id = '{MODEL}' order by contributor, build_id, context_tokens""")
    by_walk: dict[tuple, list] = {}
    for r in table:
        by_walk.setdefault((r["contributor"], r["quant"], r["quantizer"]), []).append(r)
    gram = by_walk[("Gram", "Q4_K_M", "bartowski")]
    assert [r["context_tokens"] for r in gram] == list(SIZES) and all(r["recalled"] for r in gram)
    assert {r["stop_reason"] for r in gram} == {"reached_trained_context"}
    forgot = by_walk[("Kunal Hindocha", "Q4_K_M", "unsloth")]
    assert [(r["context_tokens"], r["recalled"], r["stop_reason"]) for r in forgot] == [(4096, False, "forgot")]
    held = by_walk[("Kunal Hindocha", "F16", "unsloth")]
    # asked at 32K but never answered: the machine could not hold the prompt
    assert [(r["context_tokens"], r["recalled"]) for r in held] == [
        (4096, True), (8192, True), (16384, True), (32768, None)]
    assert {r["stop_reason"] for r in held} == {"could_not_hold"}
    old = by_walk[("nitin singh", "IQ1_S", "maziyarpanahi")]
    assert {r["stop_reason"] for r in old} == {"unknown"}  # the file does not say
    # the two Q4_K_M walks sit on different machines
    assert gram[0]["machine_id"] != forgot[0]["machine_id"]


def test_capabilities_per_build(page_build):
    caps = {(r["quantizer"], r["capability"]): (r["display_name"], r["passed"]) for r in rows(page_build, f"""
        select c.*, b.quantizer from site.model_capabilities c join marts.dim_model_build b using (build_id)
        where c.model_id = '{MODEL}'""")}
    assert caps == {("bartowski", "tool_calling"): ("Tool calling", True),
                    ("bartowski", "json_mode"): ("Structured output", True),
                    ("unsloth", "tool_calling"): ("Tool calling", False)}


def test_fits_on_rows(page_build):
    fits = {r["machine_kind"]: r for r in rows(page_build, f"select * from site.model_fits_on where model_id = '{MODEL}'")}
    assert set(fits) == {"2× NVIDIA T4", "NVIDIA GeForce RTX 3080 Ti", "Apple M4"}
    smallest = {r["smallest_build_id"] for r in fits.values()}
    assert len(smallest) == 1 and "IQ1_S" in smallest.pop()
    # four measured builds, each needing what it held plus a fifth; the F16 file (6.4 GB x 1.2)
    # fits the T4 pair and the 12 GB card, the M4's 16 GB holds all four as well
    assert {k: (r["builds_held"], r["builds_total"]) for k, r in fits.items()} == {
        "2× NVIDIA T4": (4, 4), "NVIDIA GeForce RTX 3080 Ti": (4, 4), "Apple M4": (4, 4)}
    assert fits["Apple M4"]["memory_bytes"] == 16 * 2**30 and fits["Apple M4"]["memory_kind"] == "ram"


# ---- the real LocalScore TSV ---------------------------------------------------------------
@pytest.fixture(scope="module")
def localscore_build(tmp_path_factory):
    from tests.helpers.resolution import TSV, api_run, land_localscore, tsv_runs

    if not TSV.is_file():
        pytest.skip("../shared/data/localscore is absent")
    runs, tests = [], []
    for row in tsv_runs():
        try:
            r = localscore.run_row(api_run(row))
        except KeyError:  # a run without an accelerator name is refused by the source itself
            continue
        runs.append(r)
        # two tests per run whose speeds are not the run's averages, as on LocalScore's pages
        gen, prompt = r["avg_gen_tps"] or 1.0, r["avg_prompt_tps"] or 1.0
        tests += localscore.test_rows(r["run_id"], [
            {"name": "pp1024+tg16", "n_prompt": 1024, "n_gen": 16, "prompt_tps": prompt * 1.3, "gen_tps": gen * 1.2,
             "ttft_ms": 40.0},
            {"name": "pp4096+tg256", "n_prompt": 4096, "n_gen": 256, "prompt_tps": prompt * 1.5, "gen_tps": gen * 1.4,
             "ttft_ms": 90.0}])
    work = tmp_path_factory.mktemp("localscore-page")
    land_localscore(work / "warehouse", runs, tests, name="localscore-tsv")
    return dbt_build(work / "warehouse", work, ["+model_speeds_by_hardware", "+dim_machine"],
                     "--indirect-selection", "cautious")


def test_apple_gpu_core_bins_get_their_own_hardware_ids(localscore_build):
    ids = dict(query(localscore_build, """
        select raw_hardware_name, any_value(hardware_id) from marts.fct_speed_measurements
        where raw_hardware_name like 'Apple M4 Pro%GPU' group by 1"""))
    assert ids["Apple M4 Pro 8P+4E+16GPU"] == "apple-m4-pro-16c"
    assert ids["Apple M4 Pro 10P+4E+20GPU"] == "apple-m4-pro-20c"
    # the variants keep the chip's specs, and memory configurations are machines of their own
    [(bandwidth, base)] = query(localscore_build, """
        select memory_bandwidth_gbps, base_hardware_id from marts.dim_hardware where hardware_id = 'apple-m4-pro-20c'""")
    assert (bandwidth, base) == (273.0, "apple-m4-pro")
    memories = {r[0] for r in query(localscore_build, """
        select gpu_memory_bytes / 2^30 from marts.dim_machine where hardware_id = 'apple-m4-pro-20c'""")}
    assert memories == {24, 48, 64}


def test_rtx_4090_d_row_shows_localscores_own_averages(localscore_build):
    [row] = rows(localscore_build, """
        select * from site.model_speeds_by_hardware
        where hardware_id like '%4090-d%' and model_id = 'llama-3.2-1b-instruct' and quant = 'Q4_K_M'""")
    assert row["localscore_avg_gen_tps"] == 359.0 and row["localscore_avg_prompt_tps"] == 24549.0
    assert row["localscore_avg_ttft_ms"] == 57.0 and row["localscore_performance_score"] == 5380.0
    assert row["gen_tps_median"] != 359.0  # the median of the tests is another number
    assert row["run_ids"] == "localscore:972" and row["n_localscore_runs"] == 1
    assert row["test_names"] == "pp1024+tg16, pp4096+tg256"


# ---- the offline warehouse -----------------------------------------------------------------
def test_every_carbon_row_checks_out_on_its_own_columns(offline_warehouse):
    db = offline_warehouse / "benchmarks.duckdb"
    carbon = rows(db, "select * from site.model_carbon")
    assert carbon
    for r in carbon:
        assert r["gco2_per_mtok"] == pytest.approx(r["j_per_token"] * r["gco2_per_kwh"] / 3.6, rel=1e-9), r
    [(dupes,)] = query(db, """
        select count(*) - count(distinct (build_id, machine_id, grid_area)) from site.model_carbon""")
    assert dupes == 0


def test_every_unresolved_name_of_every_source_is_audited(offline_warehouse):
    db = offline_warehouse / "benchmarks.duckdb"
    # no provisional id in any mart lacks its dim_model row
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = con.execute("""
            select table_schema || '.' || table_name from information_schema.columns
            where column_name = 'model_id' and table_schema in ('marts', 'site')""").fetchall()
        orphans = {}
        for (table,) in tables:
            n = con.execute(f"""select count(*) from {table} t where t.model_id like 'unresolved:%'
                and t.model_id not in (select model_id from marts.dim_model)""").fetchone()[0]
            if n:
                orphans[table] = n
        priced = con.execute("""select distinct openrouter_id from marts.fct_api_prices
                                where not is_model_in_catalogue""").fetchall()
        audited = {r[0] for r in con.execute(
            "select raw_name from audit.unresolved_names where source = 'openrouter' and kind = 'model'").fetchall()}
        audited_speed = set(con.execute(
            "select distinct source, kind from audit.unresolved_names where kind in ('hardware', 'model')").fetchall())
        provisional_speed = set(con.execute("""
            select distinct source, 'hardware' from marts.fct_speed_measurements where hardware_id like 'unresolved:%'
            union
            select distinct source, 'model' from marts.fct_speed_measurements where model_id like 'unresolved:%'
        """).fetchall())
    finally:
        con.close()
    assert not orphans
    assert priced and {p[0] for p in priced} <= audited
    assert provisional_speed <= audited_speed


SIZE_SUFFIXES = {"_bytes": 1, "_gb": 1e9, "_gib": 2**30}


def test_no_published_column_mixes_1e9_and_2_30_bytes(offline_warehouse):
    db = offline_warehouse / "benchmarks.duckdb"
    con = duckdb.connect(str(db), read_only=True)
    try:
        columns = con.execute("""
            select table_schema || '.' || table_name, column_name from information_schema.columns
            where table_schema in ('marts', 'site', 'audit')""").fetchall()
        by_table: dict[str, set[str]] = {}
        for table, column in columns:
            by_table.setdefault(table, set()).add(column)
        checked = 0
        for table, names in by_table.items():
            for name in names:
                # a size column says its unit; no bare "memory", "size" or "_mb" (peak_gen_tps is a speed)
                if not name.startswith("n_") and re.search(r"(memory|size|peak|weights)", name) and not re.search(
                        r"(_bytes|_gb|_gib|_gbps|_kind|_basis|_source|_pct|_tokens|_tps|_hardware_id|_name|_id|_label)$", name):
                    pytest.fail(f"{table}.{name} does not name its unit")
                assert not name.endswith("_mb"), f"{table}.{name}"
                for suffix, unit in SIZE_SUFFIXES.items():
                    if suffix == "_bytes" or not name.endswith(suffix):
                        continue
                    stem = name[: -len(suffix)]
                    if f"{stem}_bytes" not in names:
                        continue
                    bad = con.execute(f"""select count(*) from {table}
                        where abs({name} * {unit} - {stem}_bytes) > greatest(0.001 * {unit}, 1e-6 * {stem}_bytes)""").fetchone()[0]
                    assert bad == 0, f"{table}.{name} is not {stem}_bytes / {unit:g}"
                    checked += 1
        # the cards of the catalogue: a "24 GB" card is 24 x 2^30 bytes, said as 25.77 x 1e9
        [(gb, gib, nbytes)] = con.execute("""
            select memory_gb, memory_gib, memory_bytes from marts.dim_hardware where hardware_id = 'nvidia-rtx-4090'""").fetchall()
    finally:
        con.close()
    assert checked >= 3
    assert (gib, nbytes) == (24, 24 * 2**30) and gb == pytest.approx(25.77, abs=0.01)

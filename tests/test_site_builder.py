"""The reference site renders from the published site.* tables and the manifest alone."""
from __future__ import annotations

import json
import shutil

import duckdb
import pytest
from bs4 import BeautifulSoup

from site_builder import fmt
from tests.helpers.pipeline import run_benchwh, site_exports_only


def test_number_formats_match_the_reference_pages():
    assert fmt.tps(354.2) == "354" and fmt.tps(99.94) == "99.9" and fmt.tps(24549.0) == "24,549"
    assert fmt.interval(352.0, 361.4) == "352 to 361"
    assert fmt.rank_range(2, 4, 13) == "#2–4 of 13" and fmt.rank_range(1, 1, 13) == "#1 of 13"
    assert fmt.seconds(690.0) == "0.69 s" and fmt.count(1193) == "1,193"
    assert fmt.tokens_short(131072) == "128K" and fmt.tps(None) == "—" and fmt.tps(float("nan")) == "—"


def site_only_home(offline_warehouse, target):
    """A warehouse home holding a DuckDB file with nothing but the site.* tables, and the manifest."""
    (target / "exports").mkdir(parents=True)
    shutil.copy(offline_warehouse / "exports" / "manifest.json", target / "exports" / "manifest.json")
    con = duckdb.connect(str(target / "benchmarks.duckdb"))
    try:
        con.execute(f"ATTACH '{offline_warehouse / 'benchmarks.duckdb'}' AS pub (READ_ONLY)")
        con.execute("CREATE SCHEMA site")
        tables = con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'pub' "
                             "AND schema_name = 'site'").fetchall()
        for (t,) in tables:
            con.execute(f'CREATE TABLE site."{t}" AS SELECT * FROM pub.site."{t}"')
        con.execute("DETACH pub")
        schemas = {r[0] for r in con.execute("SELECT DISTINCT schema_name FROM duckdb_tables()").fetchall()}
    finally:
        con.close()
    assert schemas == {"site"}
    return target


@pytest.fixture(scope="module")
def site_only(offline_warehouse, tmp_path_factory):
    return site_only_home(offline_warehouse, tmp_path_factory.mktemp("site-only") / "warehouse")


@pytest.fixture(scope="module")
def built_site(site_only):
    proc = run_benchwh(site_only, "site", "build")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("site built:")
    return site_only / "site"


def _page(path):
    return BeautifulSoup(path.read_text(), "html.parser")


def test_site_builds_from_site_tables_and_manifest_alone(built_site, site_only, offline_warehouse):
    con = duckdb.connect(str(site_only / "benchmarks.duckdb"), read_only=True)
    try:
        profiles = [r[0] for r in con.execute("SELECT DISTINCT test_profile FROM site.generation_leaderboard").fetchall()]
        measured = [r[0] for r in con.execute("SELECT DISTINCT model_id FROM site.model_speeds_by_hardware").fetchall()]
        machines = [r[0] for r in con.execute("SELECT DISTINCT hardware_id FROM site.model_speeds_by_hardware").fetchall()]
    finally:
        con.close()
    version = json.loads((offline_warehouse / "exports" / "manifest.json").read_text())["version"]
    from site_builder.render import slug

    expected = (["index.html"] + [f"leaderboards/{slug(p)}.html" for p in profiles]
                + [f"models/{slug(m)}.html" for m in measured] + [f"hardware/{slug(h)}.html" for h in machines])
    for rel in expected:
        page = built_site / rel
        assert page.is_file(), rel
        footer = _page(page).select_one("footer.provenance")
        assert footer.select_one(".version").get_text() == version, rel
        assert footer.select("li[data-source]") or rel != "index.html"
    board = _page(built_site / f"leaderboards/{slug(profiles[0])}.html")
    assert board.select_one("p.protocol").get_text().startswith("How fast the model writes its answer")
    assert {li["data-source"] for li in _page(built_site / "index.html").select("li[data-source]")} >= {"localscore", "grid"}


def test_site_builds_from_the_parquet_exports_too(offline_warehouse, tmp_path):
    exports = site_exports_only(offline_warehouse, tmp_path / "exports")
    proc = run_benchwh(tmp_path / "warehouse", "site", "build", "--from", str(exports), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "models" / "llama-3.1-8b-instruct.html").is_file()


def test_model_without_measurements_shows_expected_speeds_as_estimates(built_site, site_only):
    con = duckdb.connect(str(site_only / "benchmarks.duckdb"), read_only=True)
    try:
        model = con.execute("""SELECT model_id FROM site.model_expected_speed
                               WHERE model_id NOT IN (SELECT model_id FROM site.model_speeds_by_hardware)
                                 AND gen_tps IS NOT NULL ORDER BY 1 LIMIT 1""").fetchall()[0][0]
        n = con.execute("SELECT count(*) FROM site.model_expected_speed WHERE model_id = ? AND gen_tps IS NOT NULL",
                        [model]).fetchall()[0][0]
    finally:
        con.close()
    page = _page(built_site / f"models/{model}.html")
    rows = page.select("table.expected tbody tr")
    with_speed = [r for r in rows if r.select_one("td.num").get_text(strip=True) != "—"]
    assert len(with_speed) == n > 0
    assert all(r.select_one(".tag.estimate") is not None for r in with_speed)
    assert page.select_one("table.measured-speeds") is None
    assert "every speed below is an estimate" in page.select_one("p.lead").get_text()


def test_site_build_user_errors_are_one_line(tmp_path):
    proc = run_benchwh(tmp_path / "warehouse", "site", "build")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("benchwh: no manifest at") and len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / "warehouse" / "exports").mkdir(parents=True)
    (tmp_path / "warehouse" / "exports" / "manifest.json").write_text("{}")
    proc = run_benchwh(tmp_path / "warehouse", "site", "build")
    assert proc.returncode == 2 and "no published warehouse at" in proc.stderr
    proc = run_benchwh(tmp_path / "warehouse", "site", "serve")
    assert proc.returncode == 2 and "no built site in" in proc.stderr


def test_docs_are_written_beside_the_exports_and_the_manifest_points_to_them(warehouse_copy):
    proc = run_benchwh(warehouse_copy, "docs")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((warehouse_copy / "exports" / "manifest.json").read_text())
    assert manifest["docs"]["path"] == "docs/index.html"
    assert manifest["docs"]["generated_for"] == manifest["version"]
    docs = warehouse_copy / "exports" / "docs"
    assert (docs / "index.html").stat().st_size > 0
    catalog = json.loads((docs / "catalog.json").read_text())
    published = {f"{n['metadata']['schema']}.{n['metadata']['name']}" for n in catalog["nodes"].values()}
    assert set(manifest["tables"]) <= published  # every exported table is documented
    leaderboard = next(n for n in catalog["nodes"].values() if n["metadata"]["name"] == "generation_leaderboard")
    assert "rank_label" in leaderboard["columns"]
    dbt_manifest = json.loads((docs / "manifest.json").read_text())
    node = dbt_manifest["nodes"]["model.benchwh.generation_leaderboard"]
    assert node["description"] and node["columns"]["rank_label"]["description"]
    assert node["depends_on"]["nodes"]  # lineage
    assert not (warehouse_copy / "benchmarks.duckdb.wal").exists()


def test_leaderboard_rows_say_which_configuration_they_are(built_site, site_only):
    """Issue 52: a leaderboard row of a run that states its settings carries its config_id and the
    label the table gives it; LocalScore's fixed harness is not labelled row by row."""
    con = duckdb.connect(str(site_only / "benchmarks.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT test_profile, build_id, config_id, config_label FROM site.generation_leaderboard "
                           "WHERE config_id != 'source-default'").fetchall()
        n_source_default = con.execute("SELECT count(*) FROM site.generation_leaderboard "
                                       "WHERE config_id = 'source-default'").fetchone()[0]
    finally:
        con.close()
    assert rows and n_source_default
    pages = {p.stem: BeautifulSoup(p.read_text(), "html.parser") for p in (built_site / "leaderboards").glob("*.html")}
    for profile, build_id, config_id, label in rows:
        row = next(tr for page in pages.values() for tr in page.select("tr[data-config-id]")
                   if tr["data-build-id"] == build_id and tr["data-config-id"] == config_id)
        assert row.select_one(".config").get_text() == label
    labelled = sum(len(page.select(".config")) for page in pages.values())
    assert labelled == len(rows)  # none for the n_source_default LocalScore rows


def test_every_page_says_demo_while_the_manifest_does_and_none_says_it_after(built_site, site_only, tmp_path):
    manifest = json.loads((site_only / "exports" / "manifest.json").read_text())
    assert manifest["demo_data"]  # the offline warehouse is demo data
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        banner = _page(page).select("div.demo-banner")
        assert len(banner) == 1 and "Demo data." in banner[0].get_text(), page
        assert banner[0]["data-demo-sources"] == ",".join(manifest["demo_data"])
    # the same tables with a manifest of live data: no banner anywhere
    live = tmp_path / "live-manifest.json"
    live.write_text(json.dumps({**manifest, "demo_data": []}))
    out = tmp_path / "site"
    proc = run_benchwh(site_only, "site", "build", "--manifest", str(live), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert not any(_page(p).select("div.demo-banner") for p in out.rglob("*.html"))

"""`benchwh sources list` and `benchwh sources new`: names refused in one line, what the scaffold
writes, and the list's figures read from real raw manifests and landing ledgers.

The scaffold's end-to-end promise (green at once through a real refresh) is tested in
tests/test_adding_a_source_guide.py, in a copy of the project.
"""
from __future__ import annotations

import json
import re

import pytest
import yaml

from ingest import scaffold
from ingest.landing import Lander, validate_frame
from ingest.raw_store import RawEntry, RawStore, sha256_hex
from ingest.replay import replay_into_store
from ingest.source import load_sources
from cli.main import main
from cli.sources import freshness
from tests.helpers.scaffold import RECORDED_AT, load_module

@pytest.mark.parametrize("name, message", [
    ("GpuPrices", "use snake_case"),
    ("gpu-prices", "use snake_case"),
    ("gpu__prices", "use snake_case"),  # dbt names use `__` as the source/entity separator
    ("_gpu", "use snake_case"),
    ("9gpus", "use snake_case"),
    ("", "use snake_case"),
    ("select", "keyword"),
    ("order", "keyword"),
    ("class", "keyword"),
    ("grid", "is taken (by ingest.sources.grid)"),
    ("openrouter", "is taken"),
    ("raw", "reserved"),
    ("x" * 41, "at most 40"),
])
def test_sources_new_refuses_a_bad_name_in_one_line(name, message, capsys):
    assert main(["sources", "new", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith("benchwh: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_sources_new_refuses_a_bad_entity(capsys):
    assert main(["sources", "new", "gpu_prices", "--entity", "Offers"]) == 2
    assert "invalid entity name 'Offers'" in capsys.readouterr().err


def test_a_name_whose_files_exist_is_taken(tmp_path):
    (tmp_path / "dbt_project" / "models" / "marts" / "speed_feed").mkdir(parents=True)
    with pytest.raises(scaffold.ScaffoldError, match="speed_feed is taken|marts/speed_feed exists"):
        scaffold.plan("speed_feed", root=tmp_path)
    (tmp_path / "dbt_project" / "models" / "site").mkdir(parents=True)
    (tmp_path / "dbt_project" / "models" / "site" / "fct_cards.sql").write_text("select 1")
    with pytest.raises(scaffold.ScaffoldError, match="dbt model fct_cards exists"):
        scaffold.plan("cards", root=tmp_path)


def test_scaffold_writes_every_piece_filled_in_and_marked(tmp_path, monkeypatch):
    plan = scaffold.plan("gpu_prices", entity="offers", root=tmp_path, recorded_at=RECORDED_AT)
    written = scaffold.write(plan, root=tmp_path)
    assert sorted(map(str, written)) == sorted([
        "ingest/sources/gpu_prices.py",
        "ingest/snapshots/gpu_prices/index.json",
        "ingest/snapshots/gpu_prices/offers_2026-11-29.json",
        "dbt_project/models/staging/gpu_prices/_gpu_prices__sources.yml",
        "dbt_project/models/staging/gpu_prices/stg_gpu_prices__offers.sql",
        "dbt_project/models/staging/gpu_prices/_gpu_prices__models.yml",
        "dbt_project/models/marts/gpu_prices/fct_gpu_prices.sql",
        "dbt_project/models/marts/gpu_prices/_gpu_prices__models.yml",
        "tests/test_source_gpu_prices.py",
    ])
    for rel in written:
        text = (tmp_path / rel).read_text()
        assert not re.search(r"\$\{?[a-z_]+\}?", text.replace("${{", "")), f"unfilled placeholder in {rel}"
        if rel.suffix == ".yml":
            yaml.safe_load(text)
        if rel.suffix == ".json":
            json.loads(text)
    todos = scaffold.todo_lines(tmp_path, written)
    assert {str(t[0]) for t in todos} >= {"ingest/sources/gpu_prices.py", "dbt_project/models/staging/gpu_prices/_gpu_prices__sources.yml"}

    # the module is a working source: its sample parses to rows that pass its model
    module = load_module(tmp_path / "ingest/sources/gpu_prices.py", "scaffolded_gpu_prices", monkeypatch)
    src = module.GpuPricesSource()
    assert src.name == "gpu_prices" and [e.name for e in src.entities] == ["offers"]
    index = json.loads((tmp_path / "ingest/snapshots/gpu_prices/index.json").read_text())
    assert index[0]["fetched_at"] == "2026-11-29T06:00:00Z"
    body = (tmp_path / "ingest/snapshots/gpu_prices" / index[0]["file"]).read_bytes()
    entry = RawEntry(source="gpu_prices", url=index[0]["url"], fetched_at=index[0]["fetched_at"], status=200,
                     sha256=sha256_hex(body), bytes=len(body), ext="json", path="-")
    valid, quarantined = validate_frame(src.parse(body, entry)["offers"], module.GpuPricesOffersSchema)
    assert len(valid) == 3 and quarantined == []

    # the dbt pieces name each other consistently
    sources_yml = yaml.safe_load((tmp_path / written[3]).read_text())
    table = sources_yml["sources"][0]["tables"][0]
    assert sources_yml["sources"][0]["name"] == "gpu_prices" and table["name"] == "offers"
    assert "landing/gpu_prices/offers/*.parquet" in table["meta"]["external_location"]
    assert "source('gpu_prices', 'offers')" in (tmp_path / written[4]).read_text()
    mart = yaml.safe_load((tmp_path / written[7]).read_text())["models"][0]
    assert mart["name"] == "fct_gpu_prices" and mart["config"]["contract"]["enforced"] is True
    assert "ref('stg_gpu_prices__offers')" in (tmp_path / written[6]).read_text()

    # a second scaffold of the same name is refused, and nothing was overwritten
    with pytest.raises(scaffold.ScaffoldError, match="taken"):
        scaffold.plan("gpu_prices", entity="offers", root=tmp_path)


def test_write_is_all_or_nothing(tmp_path):
    plan = scaffold.plan("gpu_prices", root=tmp_path, recorded_at=RECORDED_AT)
    late = tmp_path / "tests" / "test_source_gpu_prices.py"  # the last file: appears after planning
    late.parent.mkdir(parents=True)
    late.write_text("# someone else's\n")
    with pytest.raises(FileExistsError):
        scaffold.write(plan, root=tmp_path)
    assert late.read_text() == "# someone else's\n"
    assert not (tmp_path / "ingest" / "sources" / "gpu_prices.py").exists()


@pytest.mark.parametrize("last_good, expected", [
    (None, "never fetched"),
    ("2026-11-29T00:00:00Z", "fresh"),        # 6 h
    ("2026-11-27T00:00:00Z", "stale (warn)"),  # 54 h > 36 h
    ("2026-11-01T00:00:00Z", "stale (error)"),  # 29 days > 7 days
])
def test_freshness_follows_the_declared_hours(last_good, expected):
    src = load_sources()["openrouter"]
    assert (src.freshness_warn_hours, src.freshness_error_hours) == (36, 24 * 7)
    assert freshness(src, last_good, RECORDED_AT)[0] == expected


def test_freshness_of_a_file_fed_source():
    assert freshness(load_sources()["runs"], None, RECORDED_AT) == ("files only", None)


def test_sources_list_reads_manifests_and_ledgers(home, capsys):
    sources = load_sources()
    store = RawStore(home / "raw")
    lander = Lander(home / "landing", store, log=lambda _: None)
    replay_into_store("grid", store, "1")
    grid = lander.land_pending(sources["grid"])
    replay_into_store("openrouter", store, "1")
    lander.land_pending(sources["openrouter"])
    # a payload that cannot be read: rejected whole, counted as a payload, no rows
    store.put("openrouter", b"<html>oops</html>", url="https://openrouter.ai/api/v1/models",
              fetched_at="2026-11-30T06:00:00Z")
    lander.land_pending(sources["openrouter"])

    assert main(["sources", "list", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["sources"]
    assert set(report) == set(sources)
    g = report["grid"]
    assert g["entities"]["intensity"]["rows_landed"] == sum(o.landed["intensity"] for o in grid) > 0
    assert g["rows_quarantined"] == 0 and g["payloads"] == 1
    # the recording's 304 confirms the landed body later than it was first fetched
    assert g["last_fetch"] == g["last_good_fetch"] == "2026-11-09T06:01:09Z"
    o = report["openrouter"]
    assert o["last_fetch"] == "2026-11-30T06:00:00Z" and o["last_good_fetch"] < o["last_fetch"]
    # "-1" router prices land as "no fixed price": counted as landed, not quarantined
    assert o["payloads_rejected"] == 1 and o["rows_quarantined"] == 0
    assert o["rows_landed"] == o["entities"]["models"]["rows_landed"]
    assert report["localscore"]["freshness"] == "never fetched" and report["localscore"]["rows_landed"] == 0
    assert report["runs"]["freshness"] == "files only"
    assert all(r["origin"] == "built-in" for r in report.values())

    assert main(["sources", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["source", "entities", "last"]
    row = next(line for line in lines if line.startswith("grid "))
    assert "intensity" in row and "2026-11-09 06:01:09" in row and f" {g['rows_landed']} " in row

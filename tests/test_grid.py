"""Grid carbon intensity (Ember via OWID CSV): both header variants, World required, row quarantine."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ingest.config import DEFAULT_URLS
from ingest.landing import Lander
from ingest.raw_store import RawStore
from ingest.source import SourceFailed
from ingest.sources.grid import GridSource

URL = DEFAULT_URLS["grid"]
HEADER_GRAPHER = "Entity,Code,Year,Carbon intensity of electricity - gCO2/kWh"
HEADER_RENAMED = "Entity,Code,Year,carbon_intensity"


def csv_body(header: str, *rows: str) -> bytes:
    return ("\n".join((header,) + rows) + "\n").encode()


def parse(body: bytes):
    return GridSource().parse(body, None)["intensity"]


def land(tmp_path: Path, *bodies: bytes):
    store = RawStore(tmp_path / "raw")
    lander = Lander(tmp_path / "landing", store, log=lambda m: None)
    for i, body in enumerate(bodies, 1):
        store.put("grid", body, url=URL, ext="csv", fetched_at=f"2026-10-{i:02d}T06:00:00Z")
    return store, lander


def rows_of(path: Path) -> list[dict]:
    if not path.exists():
        return []
    con = duckdb.connect()
    try:
        cur = con.execute(f"select * from read_parquet('{path}')")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]
    finally:
        con.close()


def test_codes_become_iso3_only_when_they_are_iso3():
    df = parse(csv_body(HEADER_GRAPHER, "World,OWID_WRL,2024,470.5", "France,FRA,2024,41.2",
                        "Kosovo,OWID_KOS,2024,880", "EU (Ember),,2024,212.7", '"Bonaire, Sint Eustatius",BES,2024,600'))
    by_area = {r.area: r for r in df.itertuples()}
    assert by_area["World"].iso3 is None and by_area["World"].area_code == "OWID_WRL"
    assert by_area["World"].is_aggregate
    assert by_area["France"].iso3 == "FRA" and not by_area["France"].is_aggregate
    assert by_area["Kosovo"].iso3 is None and not by_area["Kosovo"].is_aggregate
    assert by_area["EU (Ember)"].iso3 is None and by_area["EU (Ember)"].area_code is None
    assert by_area["Bonaire, Sint Eustatius"].iso3 == "BES"  # quoted comma in the name


def test_bad_rows_are_quarantined_the_rest_lands(tmp_path):
    body = csv_body(HEADER_RENAMED, "World,OWID_WRL,2024,470.5", "France,FRA,2024,41.2",
                    "Germany,DEU,2024,", "Poland,POL,2024,-5", "Spain,ESP,2024,n/a",
                    "Mars,,2024,99999", "Italy,ITA,20x4,280")
    store, lander = land(tmp_path, body)
    [outcome] = lander.land_pending(GridSource())
    assert outcome.status == "landed"
    assert outcome.parsed == {"intensity": 7}
    assert outcome.landed == {"intensity": 2}
    assert outcome.quarantined == {"intensity": 5}
    landed = rows_of(lander.entity_dir("grid", "intensity") / f"{outcome.sha256}.parquet")
    assert sorted(r["area"] for r in landed) == ["France", "World"]
    quarantined = rows_of(lander.quarantine_dir("grid") / f"{outcome.sha256}.parquet")
    assert {r["record_index"] for r in quarantined} == {2, 3, 4, 5, 6}


def test_export_without_world_fails_the_source(tmp_path):
    store, lander = land(tmp_path, csv_body(HEADER_GRAPHER, "France,FRA,2024,41.2", "Germany,DEU,2024,330"))
    with pytest.raises(SourceFailed) as err:
        lander.land_pending(GridSource())
    assert "World" in str(err.value) and "\n" not in str(err.value)
    [outcome] = lander.outcomes("grid")
    assert outcome.status == "failed"
    assert not (lander.entity_dir("grid", "intensity") / f"{outcome.sha256}.parquet").exists()


def test_export_whose_value_column_is_unknown_fails_the_source(tmp_path):
    store, lander = land(tmp_path, csv_body("Entity,Code,Year,share_of_coal", "World,OWID_WRL,2024,35"))
    with pytest.raises(SourceFailed) as err:
        lander.land_pending(GridSource())
    assert "gco2_per_kwh" in str(err.value)


def test_non_csv_body_is_rejected(tmp_path):
    store, lander = land(tmp_path, b"\xff\xfe<html>")
    [outcome] = lander.land_pending(GridSource())
    assert outcome.status == "rejected"


def test_source_metadata_is_pinned():
    src = GridSource()
    assert src.license == "CC BY 4.0"
    assert "Ember" in src.attribution and "Our World in Data" in src.attribution
    assert src.vintage.startswith("ember-yearly-")


@pytest.mark.parametrize("name,header_value,world_2024,rows", [
    ("owid_carbon-intensity-electricity_2025-12-09_twsaf1.csv", "Carbon intensity of electricity - gCO2/kWh",
     473.0065, 5737),
    ("owid_carbon-intensity-electricity_2026-05-05_mackenzieehodgson.csv", "carbon_intensity", 471.84, 6106),
])
def test_real_owid_exports_parse_and_land(tmp_path, shared_data, name, header_value, world_2024, rows):
    body = (shared_data / "grid" / name).read_bytes()
    assert body.decode().splitlines()[0].endswith(header_value)
    store, lander = land(tmp_path, body)
    [outcome] = lander.land_pending(GridSource())
    assert outcome.status == "landed", outcome.reason
    assert outcome.parsed == {"intensity": rows}
    assert outcome.landed["intensity"] + outcome.quarantined["intensity"] == rows
    landed = rows_of(lander.entity_dir("grid", "intensity") / f"{outcome.sha256}.parquet")
    world = [r for r in landed if r["area"] == "World" and r["year"] == 2024]
    assert len(world) == 1 and world[0]["gco2_per_kwh"] == pytest.approx(world_2024, abs=1e-9)
    assert world[0]["iso3"] is None
    france = [r for r in landed if r["area"] == "France"]
    assert france and all(r["iso3"] == "FRA" for r in france)

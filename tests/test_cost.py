"""Cost and carbon facts as published by `benchwh refresh --offline`, checked against their formulas."""
from __future__ import annotations

import duckdb
import pytest

pytestmark = pytest.mark.slow

HOURS = 3 * 365 * 8  # dbt vars cost_hardware_lifetime_years x 365 x cost_busy_hours_per_day
USD_PER_KWH = 0.17


@pytest.fixture(scope="module")
def con(offline_warehouse):
    con = duckdb.connect(str(offline_warehouse / "benchmarks.duckdb"), read_only=True)
    yield con
    con.close()


def test_local_cost_follows_the_formula(con):
    rows = con.execute("""
        select hardware_price_usd, power_w, gen_tps_median, local_usd_per_mtok, api_usd_per_mtok, local_to_api_ratio
        from marts.fct_cost_per_mtok where local_usd_per_mtok is not null""").fetchall()
    assert rows
    for price, power, tps, local, api, ratio in rows:
        hourly = price / HOURS + power / 1000 * USD_PER_KWH
        assert local == pytest.approx(hourly / (tps * 3600) * 1e6, rel=1e-9)
        if api:
            assert ratio == pytest.approx(local / api, rel=1e-9)


def test_api_price_is_valid_at_the_measurement(con):
    rows = con.execute("""
        select c.openrouter_id, c.measured_on, c.api_usd_per_mtok, c.api_price_valid_from, c.is_api_price_valid_at_measurement,
               p.valid_from, p.valid_to, p.completion_usd_per_mtok
        from marts.fct_cost_per_mtok c
        join marts.fct_api_prices p on p.openrouter_id = c.openrouter_id and p.valid_from = c.api_price_valid_from
        where c.openrouter_id is not null""").fetchall()
    assert rows
    for _, _, api, valid_from, is_valid, p_from, _, p_price in rows:
        assert api == p_price and valid_from == p_from
        assert is_valid in (True, False)


def test_carbon_follows_the_formula_and_the_country(con):
    rows = con.execute("""
        select j_per_token, gco2_per_kwh, gco2_per_mtok, method, country, grid_area, grid_basis
        from marts.fct_carbon_per_mtok""").fetchall()
    assert rows
    for j, intensity, g, method, country, area, basis in rows:
        assert g == pytest.approx(j * 1e6 / 3.6e6 * intensity, rel=1e-9)
        assert method in ("sensor", "modelled")
        assert (basis == "world") == (area == "World")
        if country is None:
            assert area == "World"
    # LocalScore runs report power per test (a sensor) and no country: World
    methods = {(m, area) for _, _, _, m, c, area, _ in rows if c is None}
    assert ("sensor", "World") in methods

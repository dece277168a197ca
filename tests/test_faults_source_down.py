"""Issue 53 item 0: one source down does not stop the others. A live refresh of OpenRouter and the
grid where the grid answers 503 publishes OpenRouter's new prices; the grid keeps its last good
landing and is named stale, with the error, by the refresh, `status`, the manifest and the
freshness check. `--strict` keeps the old all-or-nothing rule. Real loopback servers, real runs."""
from __future__ import annotations

import json

import duckdb
import pytest

from tests.helpers.faults import SOURCES, models_payload
from tests.helpers.live import Resource, recorded_body
from tests.helpers.loopback import LoopbackServer, Reply
from tests.helpers.pipeline import file_sha256, run_benchwh

pytestmark = pytest.mark.slow

NEW_PROMPT_PRICE = "0.000123"  # USD per token: 123 per million


def new_price(doc: dict) -> None:
    doc["data"][0]["pricing"]["prompt"] = NEW_PROMPT_PRICE


def published(home, sql: str) -> list[tuple]:
    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_source_down_is_stale_and_the_others_publish(warehouse_copy):
    home = warehouse_copy
    state = {"models": Resource(recorded_body("openrouter"), '"m1"', "application/json"),
             "grid": Resource(recorded_body("grid"), '"g1"', "text/csv")}
    with LoopbackServer() as srv:
        srv.route("/api/v1/models", lambda req: state["models"](req))
        srv.route("/data/grid.csv", lambda req: state["grid"](req))
        env = {"BENCHWH_OPENROUTER_URL": srv.url + "/api/v1", "BENCHWH_GRID_URL": srv.url + "/data/grid.csv"}

        first = run_benchwh(home, "refresh", *SOURCES, **env)  # live data replaces the demo data
        assert first.returncode == 0, first.stderr[-3000:]
        grid_rows = published(home, "select count(*) from marts.fct_grid_intensity")[0][0]
        assert grid_rows > 0
        openrouter_id = json.loads(recorded_body("openrouter"))["data"][0]["id"]

        # the grid goes down (503 on every attempt) while OpenRouter changes a price
        state["models"] = Resource(models_payload(new_price), '"m2"', "application/json")
        state["grid"] = lambda req: Reply(503, b"down for maintenance", {"Retry-After": "0"})
        before = file_sha256(home / "benchmarks.duckdb")
        strict = run_benchwh(home, "refresh", *SOURCES, "--strict", **env)
        assert strict.returncode == 1
        assert "503" in strict.stderr.strip().splitlines()[-1], strict.stderr[-2000:]
        assert file_sha256(home / "benchmarks.duckdb") == before

        down = run_benchwh(home, "refresh", *SOURCES, **env)
        assert down.returncode == 0, down.stderr[-3000:]
        assert down.stdout.startswith("refreshed "), down.stdout
        warning = next(line for line in down.stderr.splitlines() if "warning: grid failed" in line)
        assert "503" in warning and "last good landing" in warning
        price = published(home, f"""select prompt_usd_per_mtok from marts.fct_api_prices
                                    where openrouter_id = '{openrouter_id}' and is_current""")
        assert price == [(pytest.approx(123.0),)]
        # the grid's last good rows are still there
        assert published(home, "select count(*) from marts.fct_grid_intensity")[0][0] == grid_rows

        status = json.loads(run_benchwh(home, "status", "--json").stdout)["sources"]
        assert "503" in status["grid"]["last_failure"]["error"] and status["openrouter"]["last_failure"] is None
        text = run_benchwh(home, "status").stdout
        assert "last run FAILED at " in text and "503" in text
        manifest = json.loads((home / "exports" / "manifest.json").read_text())["sources"]
        assert "503" in manifest["grid"]["last_failure"]["error"] and manifest["openrouter"]["last_failure"] is None

        # back up: the failure is cleared
        state["grid"] = Resource(recorded_body("grid"), '"g1"', "text/csv")
        up = run_benchwh(home, "refresh", *SOURCES, **env)
        assert up.returncode == 0, up.stderr[-3000:]
        assert "warning: grid failed" not in up.stderr
        assert json.loads(run_benchwh(home, "status", "--json").stdout)["sources"]["grid"]["last_failure"] is None

"""The live path against a loopback server speaking OpenRouter's and the grid CSV's formats."""
from __future__ import annotations

import json

import pytest

from tests.helpers.live import Resource, recorded_body
from tests.helpers.loopback import LoopbackServer, Reply
from tests.helpers.pipeline import file_sha256, run_benchwh, table_counts

pytestmark = pytest.mark.slow


def raw_blobs(home) -> list:
    return sorted(p for p in (home / "raw").rglob("*") if p.is_file() and p.name != "manifest.jsonl")


def test_live_refresh_is_polite_and_conditional(tmp_path):
    home = tmp_path / "warehouse"
    models = Resource(recorded_body("openrouter"), '"m1"', "application/json",
                      failures=[Reply(429, b"slow down", {"Retry-After": "2"})])
    grid = Resource(recorded_body("grid"), '"g1"', "text/csv",
                    failures=[Reply(503, b"busy"), Reply(503, b"busy")])
    with LoopbackServer() as srv:
        srv.route("/robots.txt", Reply(200, b"User-agent: *\nDisallow: /private\n"))
        srv.route("/api/v1/models", models)
        srv.route("/data/grid.csv", grid)
        env = {"BENCHWH_OPENROUTER_URL": srv.url + "/api/v1", "BENCHWH_GRID_URL": srv.url + "/data/grid.csv"}

        first = run_benchwh(home, "refresh", "--source", "openrouter", "--source", "grid", **env)
        assert first.returncode == 0, first.stderr[-3000:]
        counts = table_counts(home / "benchmarks.duckdb")
        assert counts["marts.fct_api_prices"] > 0 and counts["marts.fct_grid_intensity"] > 0
        # 503, 503, 200 succeeded; the 429's Retry-After: 2 was waited out
        assert grid.statuses == [503, 503, 200]
        assert models.statuses == [429, 200]
        model_hits = [r.at for r in srv.requests if r.path == "/api/v1/models"]
        assert 1.9 <= model_hits[1] - model_hits[0] < 6
        assert all("benchwh" in r.headers.get("user-agent", "") for r in srv.requests)

        blobs = raw_blobs(home)
        second = run_benchwh(home, "refresh", "--source", "openrouter", "--source", "grid", **env)
        assert second.returncode == 0, second.stderr[-3000:]
        assert models.statuses[-1] == 304 and grid.statuses[-1] == 304
        assert raw_blobs(home) == blobs  # unchanged resources store nothing new
        manifest = [json.loads(l) for l in (home / "raw" / "openrouter" / "manifest.jsonl").read_text().splitlines()]
        assert [m["status"] for m in manifest] == [200, 304]

        published = file_sha256(home / "benchmarks.duckdb")
        env["BENCHWH_GRID_URL"] = srv.url + "/private/grid.csv"
        # robots.txt disallows the new path: under --strict the refresh fails, else the grid keeps
        # its last good landing, named stale, and nothing new is published
        strict = run_benchwh(home, "refresh", "--source", "grid", "--strict", **env)
        assert strict.returncode != 0
        assert "robots.txt" in strict.stderr.strip().splitlines()[-1]
        third = run_benchwh(home, "refresh", "--source", "grid", **env)
        assert third.returncode == 0, third.stderr[-3000:]
        assert "warning: grid failed" in third.stderr and "robots.txt" in third.stderr
        assert not any(p.startswith("/private") for p in srv.paths())
        assert file_sha256(home / "benchmarks.duckdb") == published

"""Source faults (5xx after retries, zero rows, a missing required field, stale data) never damage
the last good warehouse: sha256 unchanged, one-line reason, no .wal, no abandoned build."""
from __future__ import annotations

import pytest

from ingest.http import PoliteClient
from tests.helpers.faults import SOURCES, assert_failed_cleanly, models_payload, published, site  # noqa: F401 (fixtures)
from tests.helpers.loopback import LoopbackServer, Reply
from tests.helpers.pipeline import file_sha256, run_benchwh
from tests.helpers.live import Resource, recorded_body

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name, reply, expect", [
    # Retry-After: 0 spares the test the client's backoff (tests/test_http.py times it): the
    # retries still run and the fetch still fails on the last 503
    ("5xx", Reply(503, b"down", {"Retry-After": "0"}), "503"),
    ("zero rows", Reply(200, models_payload(lambda d: d.update(data=[])), {"ETag": '"z"'}), "zero"),
    ("missing id", Reply(200, models_payload(lambda d: d["data"][0].pop("id")), {"ETag": '"x"'}), "id"),
])
def test_source_faults(published, site, name, reply, expect):
    srv, state, env = site
    home = published
    before = file_sha256(home / "benchmarks.duckdb")
    state["models"] = lambda req: reply
    try:
        proc = run_benchwh(home, "refresh", *SOURCES, **env)
    finally:
        state["models"] = Resource(recorded_body("openrouter"), '"m1"', "application/json")
    assert_failed_cleanly(home, proc, before, expect)
    if name == "5xx":  # asked once and again after each 503, as many times as the refresh's client retries
        assert [r.path for r in srv.requests].count("/api/v1/models") == 1 + PoliteClient().retries


def test_stale_source_blocks_publish_when_its_fetch_lands_nothing(warehouse_copy):
    """Upstream changed shape: the payload is rejected, the last good prices are weeks old -> no publish."""
    home = warehouse_copy
    before = file_sha256(home / "benchmarks.duckdb")
    with LoopbackServer() as srv:
        srv.route("/api/v1/models", Reply(200, b'{"error": "moved to /v2"}', {"Content-Type": "application/json"}))
        proc = run_benchwh(home, "refresh", "--source", "openrouter", BENCHWH_OPENROUTER_URL=srv.url + "/api/v1")
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert "freshness" in last and "openrouter" in last, last
    assert file_sha256(home / "benchmarks.duckdb") == before

"""`benchwh bench --recall --submit` end to end: measure, sign, `runs add`, rebuild, publish.

The real console script runs in a subprocess against a streaming server on 127.0.0.1, with a
key that `benchwh keys generate` wrote and `benchwh keys trust` trusted.
"""
from __future__ import annotations


import duckdb
import pytest

from ingest.sources.runs import dsse
from ingest.sources.runs.payload import validate_payload
from tests.helpers.openai_server import OpenAIServer, OpenAIServerConfig
from tests.helpers.pipeline import run_benchwh

# a full rebuild inside; on a busy 2-core machine it can take minutes
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_bench_submit_publishes_the_run_and_its_recall_walk(tmp_path):
    home = tmp_path / "warehouse"
    home.mkdir()
    gen = run_benchwh(home, "keys", "generate")
    assert gen.returncode == 0, gen.stderr
    public = next(l.split()[-1] for l in gen.stdout.splitlines() if l.startswith("public key:"))
    trust = run_benchwh(home, "keys", "trust", public, "--contributor", "bench-test")
    assert trust.returncode == 0, trust.stderr

    out = tmp_path / "run.json"
    cfg = OpenAIServerConfig(n_ctx=40_000, recall_up_to=16_384, first_token_s=0.01, per_token_s=0.001)
    with OpenAIServer(cfg) as srv:
        # no --key: the key `keys generate` wrote is the default
        done = run_benchwh(home, "bench", "--endpoint", srv.url, "--model", "test-model", "--out", str(out),
                           "--warmup", "1", "--repetitions", "3", "--max-tokens", "20",
                           "--recall", "--submit", "--country", "FR")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "run.json: accepted as signed (key of bench-test), 1 run, 3 samples landed" in done.stdout

    trusted = dsse.load_trusted_keys(home)
    verified = dsse.verify_envelope(out.read_bytes(), trusted)
    assert verified.trust == "signed"
    sid = validate_payload(verified.payload_bytes)["submission_id"]

    con = duckdb.connect(str(home / "benchmarks.duckdb"), read_only=True)
    try:
        recall = con.execute(
            "select context_tokens, is_recalled, largest_context_recalled from marts.fct_context_recall "
            "where source_run_id = ? order by context_tokens", [sid]).fetchall()
        speed = con.execute(
            "select count(*), min(trust), min(source) from marts.fct_speed_measurements "
            "where source_run_id = ?", [sid]).fetchone()
    finally:
        con.close()
    assert recall == [(4096, True, 16384), (8192, True, 16384), (16384, True, 16384), (32768, False, 16384)]
    assert speed == (3, "signed", "runfile")

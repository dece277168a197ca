"""The fingerprint of what a build reads (publish/inputs.py): it moves with every input a build
depends on and stays put when nothing a build reads changed."""
from __future__ import annotations

import os

from publish.inputs import inputs_fingerprint


def test_fingerprint_follows_landing_fetch_log_code_and_dbt_files(home):
    landing, raw = home / "landing" / "runs" / "samples", home / "raw" / "runs"
    landing.mkdir(parents=True)
    raw.mkdir(parents=True)
    (landing / "a.parquet").write_bytes(b"x")
    (raw / "manifest.jsonl").write_text('{"n": 1}\n')
    base = inputs_fingerprint("rev", "dbt")
    assert inputs_fingerprint("rev", "dbt") == base

    os.utime(raw / "manifest.jsonl")  # each fetch touches the log: not a change
    assert inputs_fingerprint("rev", "dbt") == base
    assert inputs_fingerprint("rev2", "dbt") != base
    assert inputs_fingerprint("rev", "dbt2") != base

    with open(raw / "manifest.jsonl", "a") as fh:  # a 304 logged: dbt reads it
        fh.write('{"n": 2}\n')
    logged = inputs_fingerprint("rev", "dbt")
    assert logged != base

    (landing / "b.parquet").write_bytes(b"y")  # a payload landed
    landed = inputs_fingerprint("rev", "dbt")
    assert landed != logged

    (landing / "b.parquet").unlink()  # landed again (same names, new folder times)
    (landing / "b.parquet").write_bytes(b"y")
    st = os.stat(landing)
    os.utime(landing, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert inputs_fingerprint("rev", "dbt") != landed

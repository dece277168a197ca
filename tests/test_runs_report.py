"""`runs add` says where each file went: signed or unverified, names that did not resolve with the
alias line that would map them, and whether its runs reach the site tables."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ingest.sources.runs import dsse
from ingest.sources.runs.payload import payload_bytes
from tests.helpers.hostile import good_payload
from tests.helpers.pipeline import run_benchwh

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


def test_runs_add_reports_trust_resolution_and_site_tables(warehouse_copy, tmp_path):
    home = warehouse_copy
    # the example run, signed by the example key, which this warehouse trusts
    keys = json.loads((EXAMPLES / "trusted_keys.json").read_text())["keys"][0]
    assert run_benchwh(home, "keys", "trust", keys["public_key"], "--contributor", "example").returncode == 0
    shutil.copy(EXAMPLES / "run.dsse.json", tmp_path / "example.json")
    # a run signed by a key nobody trusts, on a GPU the catalogue does not know
    dsse.write_private_key(tmp_path / "stranger.pem")
    doc = good_payload(**{"machine.gpu": "Contoso Blaster 9000"})
    (tmp_path / "stranger.json").write_text(json.dumps(
        dsse.sign_payload(payload_bytes(doc), dsse.load_private_key(tmp_path / "stranger.pem"))))

    proc = run_benchwh(home, "runs", "add", str(tmp_path / "example.json"), str(tmp_path / "stranger.json"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout.splitlines()
    assert "example.json: accepted as signed (key of example), 1 run, 10 samples landed" in out
    assert any(l.startswith("stranger.json: accepted as unverified") for l in out)
    assert "example.json: in the site tables" in out
    unresolved = next(l for l in out if l.startswith("stranger.json: hardware name 'Contoso Blaster 9000'"))
    assert "did not resolve (closest: " in unresolved
    assert "dbt_project/seeds/hardware_aliases.csv: Contoso Blaster 9000," in unresolved
    assert any(l.startswith("stranger.json: not in the site tables: it is unverified") for l in out)

    # the rebuild fetched nothing and replayed no recording: its run's tags say so in the UI
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home / "dagster")) as instance:
        [run] = instance.get_runs()
    assert (run.tags["benchwh/sources"], run.tags["benchwh/offline"]) == ("none", "0"), run.tags

"""Hostile input (DESIGN §6): each generated case is rejected with its specific reason, within
CPU and memory bounds, writing nothing outside the warehouse home and publishing nothing."""
from __future__ import annotations

import os
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest

from cli.main import main
from ingest.sources.runs import dsse
from ingest.sources.runs.add import receive
from ingest.sources.runs.files import collect
from tests.helpers.hostile import cases
from tests.helpers.keys import trust

CASES = cases()


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    path = tmp_path_factory.mktemp("key") / "k.pem"
    dsse.write_private_key(path)
    return dsse.load_private_key(path)


def _trust(home: Path, key) -> None:
    trust(home, key, "tester")


def _tree(root: Path) -> dict[str, int]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = os.lstat(p).st_mtime_ns
    return out


def test_corpus_is_large_and_specific():
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)
    assert len({c.check for c in CASES}) >= 30  # reasons are specific, not one catch-all


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_rejected_with_reason(case, key, home, tmp_path, monkeypatch):
    _trust(home, key)
    systmp = tmp_path / "systmp"  # archives are extracted under the temp dir: watch this one
    systmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(systmp))
    inbox = tmp_path / "in"
    inbox.mkdir()
    path = case.make(inbox, key)
    outside_before = _tree(tmp_path / "in")
    cpu_before = time.process_time()
    tracemalloc.start()
    try:
        results = receive(list(collect([path])), home)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    cpu = time.process_time() - cpu_before
    assert len(results) == 1, [r.line() for r in results]
    result = results[0]
    assert result.status == "rejected", result.line()
    assert result.check == case.check, result.line()
    assert result.reason and len(result.reason.splitlines()) == 1
    assert cpu < 5.0  # CPU time of this process, not the wall clock
    assert peak < 512 * 1024 * 1024  # Python allocations while handling the file
    # nothing written beside the input, no extraction folder left behind
    assert _tree(tmp_path / "in") == outside_before
    assert list(systmp.iterdir()) == []
    # and nothing landed: no run rows
    assert not list((home / "landing" / "runs" / "runs").glob("[0-9a-f]*.parquet"))


def test_whole_corpus_through_cli_publishes_nothing(key, home, tmp_path, capsys):
    _trust(home, key)
    inbox = tmp_path / "corpus"
    inbox.mkdir()
    for case in CASES:
        case.make(inbox, key)
    published = home / "benchmarks.duckdb"
    published.write_bytes(b"the last good warehouse")  # stands in for a published file
    before = published.stat().st_mtime_ns

    code = main(["runs", "add", str(inbox)])

    out = capsys.readouterr().out
    assert code == 1
    assert published.read_bytes() == b"the last good warehouse"
    assert published.stat().st_mtime_ns == before
    lines = [l for l in out.splitlines() if ": rejected: " in l]
    # every case file gives one rejected line (its sidecar travels with it; the symlink's
    # target file is a plain '[]' and is rejected as an unknown format too)
    assert len(lines) >= len(CASES)
    assert "0 accepted" in out

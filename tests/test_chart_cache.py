"""Charts are drawn once per spec: a site build reads an unchanged chart back from the chart cache
(site_builder/charts.py), with vl-convert drawing only what is new."""
from __future__ import annotations

import os

import pytest

from site_builder import charts

ROWS = [{"label": "RTX 4090", "gen_tps_median": 120.5, "gen_tps_ci_low": 118.0, "gen_tps_ci_high": 123.0},
        {"label": "M2 Pro", "gen_tps_median": 41.25, "gen_tps_ci_low": None, "gen_tps_ci_high": None}]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "charts"
    monkeypatch.setenv("BENCHWH_SITE_CACHE", str(folder))
    return folder


def entries(folder):
    return sorted(p.name for p in folder.glob("*.svg")) if folder.is_dir() else []


def test_a_kept_chart_is_the_chart_vl_convert_draws(cache, monkeypatch):
    drawn = charts.interval_chart(ROWS)
    assert len(entries(cache)) == 1
    assert charts.interval_chart(ROWS) == drawn  # read back
    monkeypatch.setenv("BENCHWH_SITE_CACHE", "")  # nothing kept: vl-convert draws it again
    assert charts.interval_chart(ROWS) == drawn
    assert len(entries(cache)) == 1


def test_the_kept_entry_is_what_is_read_and_a_changed_spec_draws_anew(cache):
    charts.interval_chart(ROWS)
    (entry,) = cache.glob("*.svg")
    entry.write_text('<svg xmlns="http://www.w3.org/2000/svg" id="kept"></svg>')
    assert 'id="kept"' in charts.interval_chart(ROWS)

    changed = [{**ROWS[0], "gen_tps_median": 120.6}, ROWS[1]]
    assert 'id="kept"' not in charts.interval_chart(changed)
    assert len(entries(cache)) == 2


@pytest.mark.parametrize("garbled", ["", "<svg xmlns=", "not an svg</svg>", b"\xff\xfe<svg"])
def test_a_torn_or_foreign_entry_is_drawn_again_and_replaced(cache, garbled):
    drawn = charts.interval_chart(ROWS)
    (entry,) = cache.glob("*.svg")
    entry.write_bytes(garbled if isinstance(garbled, bytes) else garbled.encode())
    assert charts.interval_chart(ROWS) == drawn
    assert entry.read_text() == drawn.replace('<svg role="img" style="max-width:100%;height:auto" ', "<svg ", 1)


def test_a_folder_that_cannot_be_written_only_means_drawing(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("BENCHWH_SITE_CACHE", str(blocker / "charts"))  # under a file: never a folder
    assert charts.interval_chart(ROWS).startswith('<svg role="img"')


def test_pruning_keeps_the_most_recently_used(cache):
    made = []  # entry of each chart, in the order drawn
    for value in range(5):
        charts.bar_chart(["a"], [float(value)], "tok/s")
        made.append(next(name for name in entries(cache) if name not in made))
    for age, name in enumerate(made):  # drawn long ago, oldest first
        os.utime(cache / name, (1_000_000 + age, 1_000_000 + age))
    charts.bar_chart(["a"], [0.0], "tok/s")  # the oldest is read back: now the most recent
    assert charts.prune_cache(keep=2) == 3
    assert entries(cache) == sorted([made[0], made[4]])
    assert charts.prune_cache(keep=2) == 0

"""docs/adding-a-source.md, followed literally, in a temporary copy of the project.

One module-scoped run (each refresh costs minutes), three acceptance checks on it:
- the guide's `sh` blocks run in order (`benchwh`, `pytest` and `python` are this interpreter
  with PYTHONPATH at the copy) and publish its GPU prices mart;
- a second source scaffolded with `benchwh sources new plain_feed` and not edited at all is
  landed and published by the same refresh (the scaffold is green at once);
- tests/external_source_pkg, built and installed by pip into a folder on PYTHONPATH, registers
  `example_power` through the entry point group `benchwh.sources`: `benchwh sources list` shows
  it and the refresh lands it from the recording inside the package.
No file under orchestration/ is edited by any of it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from orchestration.manifest import DBT_NO_TRACKING
from tests.helpers.pipeline import copy_project

PROJECT_ROOT = Path(__file__).resolve().parent.parent
GUIDE = PROJECT_ROOT / "docs" / "adding-a-source.md"
EXTERNAL_PKG = Path(__file__).resolve().parent / "external_source_pkg"
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```\s*$", re.S | re.M)
COPY_IGNORE = shutil.ignore_patterns(".git", ".venv", "warehouse", "target", "logs", "__pycache__",
                                     ".pytest_cache", "*.egg-info", "build", "dist")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def guide_blocks() -> list[str]:
    return SH_BLOCK.findall(GUIDE.read_text(encoding="utf-8"))


def tree_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def write_shim(bin_dir: Path, name: str, command: str) -> None:
    path = bin_dir / name
    path.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
    path.chmod(0o755)


class Project:
    def __init__(self, root: Path):
        self.root = root
        self.copy = root / "project"
        self.home = root / "warehouse"
        self.site = root / "site"
        bin_dir = root / "bin"
        bin_dir.mkdir()
        py = f'"{sys.executable}"'
        write_shim(bin_dir, "benchwh", f"{py} -m cli.main")
        write_shim(bin_dir, "pytest", f"{py} -m pytest -p no:cacheprovider")
        write_shim(bin_dir, "python", py)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("BENCHWH_", "DAGSTER_", "PYTEST_", "PYTHON"))}
        env.update({
            "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": f"{self.copy}{os.pathsep}{self.site}",
            "BENCHWH_HOME": str(self.home),
            "BENCHWH_MAX_RPS": "1000",
            **DBT_NO_TRACKING,
        })
        # nothing may reach the internet, whatever a step tries
        for var in ("LOCALSCORE", "OPENROUTER", "HF", "GRID", "GPU_PRICES", "PLAIN_FEED", "EXAMPLE_POWER"):
            env[f"BENCHWH_{var}_URL"] = "http://127.0.0.1:9/unset"
        self.env = env

    def run(self, script: str, timeout: float = 1800) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=self.copy, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def benchwh(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=self.copy, env=self.env,
                              capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    p = Project(tmp_path_factory.mktemp("guide"))
    # the project as shipped: not the sources the user scaffolded in their own tree
    copy_project(PROJECT_ROOT, p.copy, COPY_IGNORE)
    p.orchestration_before = tree_hashes(p.copy / "orchestration")

    # the external package: a real build and install by pip, into a folder on PYTHONPATH
    pkg = p.root / "external_source_pkg"
    shutil.copytree(EXTERNAL_PKG, pkg, ignore=COPY_IGNORE)
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                          "--no-deps", "--no-build-isolation", "--no-index", "--target", str(p.site), str(pkg)],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-2000:]
    assert list(p.site.glob("benchwh_example_source-*.dist-info/entry_points.txt"))

    # the scaffold as it comes, untouched: it must be green at once
    plain = p.benchwh("sources", "new", "plain_feed")
    assert plain.returncode == 0, plain.stderr

    p.listed_before = p.benchwh("sources", "list")
    p.steps = []
    for i, block in enumerate(guide_blocks(), 1):
        proc = p.run(block)
        p.steps.append(proc)
        if proc.returncode != 0:
            pytest.fail(f"guide step {i} failed (exit {proc.returncode}):\n{block[:600]}\n--- stdout\n"
                        f"{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}", pytrace=False)
    return p


def published(p: Project, sql: str) -> list[tuple]:
    con = duckdb.connect(str(p.home / "benchmarks.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_the_guide_has_the_steps_it_promises():
    blocks = guide_blocks()
    joined = "\n".join(blocks)
    assert blocks[0].strip() == "benchwh sources new gpu_prices --entity offers"
    for step in ("benchwh refresh --offline", "pytest -q tests/test_source_gpu_prices.py", "benchwh sources list"):
        assert step in joined, step


def test_guide_publishes_the_gpu_prices_mart(project):
    rows = {r[0]: r[1:] for r in published(project, "select offer_id, price_usd, usd_per_memory_gb, is_in_stock "
                                                     "from marts.fct_gpu_prices")}
    assert len(rows) == 20
    price, per_gb, in_stock = rows["northwind/PNY-VCG409024TFXPB1"]
    assert price == pytest.approx(1899.99) and per_gb == pytest.approx(79.17) and in_stock is True
    assert not any(r[0] == "contoso/ZOTAC-RTX3060-TWIN-12G" for r in rows)  # price "n/a": quarantined
    manifest = json.loads((project.home / "exports" / "manifest.json").read_text())
    assert manifest["tables"]["marts.fct_gpu_prices"]["rows"] == 20
    assert manifest["sources"]["gpu_prices"]["license"].startswith("GPU prices API")
    # the guide's own pytest step ran the contract suite for the new source, by name
    pytest_step = next(s for s in project.steps if "test_sources_contract" in s.args[-1])
    assert "passed" in pytest_step.stdout and "failed" not in pytest_step.stdout


def test_unedited_scaffold_lands_and_publishes_its_mart(project):
    assert published(project, "select count(*) from marts.fct_plain_feed") == [(3,)]
    assert published(project, "select record_id from marts.fct_plain_feed order by 1") == [("a-1",), ("a-2",), ("a-3",)]
    # its TODO markers are still there: the guide's edits touched only gpu_prices
    assert "TODO(benchwh)" in (project.copy / "ingest" / "sources" / "plain_feed.py").read_text()
    # and the refresh said so, since the manifest publishes its licence as it stands
    refresh = next(s for s in project.steps if "refresh --offline" in s.args[-1])
    assert "warning: source plain_feed still has TODO in its license, attribution" in refresh.stderr


def test_external_package_source_is_listed_and_landed(project):
    assert "example_power" in project.listed_before.stdout
    assert "package (benchwh_example_source)" in project.listed_before.stdout
    listed = project.benchwh("sources", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    report = json.loads(listed.stdout)["sources"]["example_power"]
    assert report["origin"] == "package (benchwh_example_source)"
    assert report["rows_landed"] == 3 and report["rows_quarantined"] == 0
    assert report["last_fetch"] == "2026-11-02T07:00:00Z"
    glob = project.home / "landing" / "example_power" / "readings" / "*.parquet"
    gpus = duckdb.sql(f"select gpu from read_parquet('{glob}') order by gpu").fetchall()
    assert [g[0] for g in gpus] == ["AMD Radeon RX 7900 XTX", "NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 4090"]


def test_nothing_under_orchestration_was_edited(project):
    assert tree_hashes(project.copy / "orchestration") == project.orchestration_before

"""`benchwh docs`: dbt's static docs (every published table and column, with descriptions and
lineage) generated against a copy of the published file, written to exports/docs/."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ingest import config
from ingest.files import write_atomically
from ingest.locks import home_lock
from publish.publish import exports_dir, read_version
from orchestration.manifest import DBT_NO_TRACKING, DBT_PROJECT_DIR
from orchestration.resources import dbt_executable


class DocsError(Exception):
    pass


def generate_docs() -> Path:
    published = config.published_path()
    version = read_version(published)
    if version is None:
        raise DocsError(f"nothing published in {config.home()} (run `benchwh refresh`)")
    out = exports_dir() / "docs"
    with tempfile.TemporaryDirectory(prefix="benchwh-docs-", dir=config.home()) as tmp:
        # dbt opens its database for writing: give it a copy, never the published file
        copy = Path(tmp) / "published.duckdb"
        shutil.copy2(published, copy)
        target = Path(tmp) / "target"
        env = {**os.environ, **DBT_NO_TRACKING, "BENCHWH_HOME": str(config.home()), "BENCHWH_BUILD_PATH": str(copy)}
        proc = subprocess.run(
            [dbt_executable(), "docs", "generate", "--static", "--project-dir", str(DBT_PROJECT_DIR),
             "--profiles-dir", str(DBT_PROJECT_DIR), "--target-path", str(target), "--log-path", str(Path(tmp) / "logs"),
             "--vars", json.dumps({"build_version": version["version"], "code_revision": version["code_revision"]})],
            env=env, capture_output=True, text=True, cwd=str(DBT_PROJECT_DIR))
        if proc.returncode != 0 or not (target / "static_index.html").exists():
            lines = [l for l in (proc.stdout + proc.stderr).splitlines() if "error" in l.lower()] or \
                (proc.stdout + proc.stderr).strip().splitlines() or ["no output"]
            raise DocsError(f"dbt docs generate failed: {lines[0].strip()[:300]}")
        staged = Path(tmp) / "docs"
        staged.mkdir()
        shutil.copy2(target / "static_index.html", staged / "index.html")
        for name in ("manifest.json", "catalog.json"):
            shutil.copy2(target / name, staged / name)
        with home_lock("publish"):
            if out.exists():
                shutil.rmtree(out)
            shutil.move(str(staged), str(out))
            _point_manifest_to_docs(version["version"])
    return out / "index.html"


def _point_manifest_to_docs(version: str) -> None:
    path = exports_dir() / "manifest.json"
    if not path.exists():
        return
    manifest = json.loads(path.read_text())
    manifest["docs"] = {"path": "docs/index.html", "generated_for": version}
    write_atomically(path, json.dumps(manifest, indent=2, sort_keys=True, default=str))

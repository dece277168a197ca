"""dbt as a subprocess, and dagster-dbt without dbt-core in Dagster's processes.

dbt only ever runs as its own process here (`benchwh-dbt`, `dbt parse`), and nothing asks a dbt
adapter in this one (`BenchDbtCliResource`). dagster-dbt still imports dbt-core when it can, for
types it defines itself when dbt-core lives elsewhere; that import was 1.3 of the 3.2 CPU-seconds
of loading the definitions, in every refresh, step process and UI code server. So dagster-dbt is
imported here with `dbt` hidden (it looks once, at import: dagster_dbt/compat.py), and dbt is
importable again right after. Import this module before `dagster_dbt`. Where dbt-core was
imported first, dagster-dbt uses it as before; the asset graph is the same either way
(tests/test_definitions.py).
"""
from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

if "dagster_dbt" not in sys.modules and "dbt" not in sys.modules:
    # `import dbt...` raises ModuleNotFoundError until dagster_dbt is in (no thread here imports dbt)
    sys.modules["dbt"] = None
    try:
        import dagster_dbt  # noqa: F401
    finally:
        del sys.modules["dbt"]

from dagster_dbt import DbtCliResource  # noqa: E402
from dagster_dbt.dbt_project import DagsterDbtProjectPreparer, DbtProject  # noqa: E402
from packaging import version  # noqa: E402


def dbt_executable() -> str:
    """The dbt installed beside this interpreter: works without an activated venv."""
    candidate = Path(sys.executable).parent / "dbt"
    return str(candidate) if candidate.exists() else "dbt"


def guarded_dbt_executable() -> str:
    """`benchwh-dbt` (cli/dbt_guard.py): dbt that dies with this process; plain dbt without it."""
    candidate = Path(sys.executable).parent / "benchwh-dbt"
    return str(candidate) if candidate.exists() else dbt_executable()


class BenchDbtCliResource(DbtCliResource):
    """dagster-dbt's resource without two start-up costs of every build (about 3 s together):
    it ran `dbt --version` in a subprocess to learn the version of the dbt beside this interpreter
    (the installed dbt-core's), and loaded the profile and the DuckDB adapter in this process for
    row counts and column metadata, which no asset here asks for."""

    @property
    def _cli_version(self) -> version.Version:
        return version.parse(metadata.version("dbt-core"))

    def _initialize_dbt_core_adapter(self, args):
        return None


class BenchPreparer(DagsterDbtProjectPreparer):
    """dagster-dbt's `dbt parse` through `BenchDbtCliResource`: no `dbt --version` subprocess and
    no dbt adapter (nor dbt-core) loaded in this process for a parse. dbt runs as `benchwh-dbt`,
    as builds do: a full parse of this project 15-15.7 -> 8.8-9.8 s (its templates' compiled code
    and the validation schemas kept by earlier dbt processes, cli/dbt_guard.py)."""

    def _prepare_manifest(self, project: DbtProject) -> None:
        (BenchDbtCliResource(project_dir=project, dbt_executable=guarded_dbt_executable())
         .cli(self._prepare_project_cli_args, target_path=project.target_path)
         .wait())
        self._invalidate_seeds_in_partial_parse(project)

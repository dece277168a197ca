"""Jinja context for sqlfluff's jinja templater (.sqlfluff library_path): dbt's var() with the
project's own values, so models that compute with vars render to real SQL without a database."""
from pathlib import Path

import yaml

_VARS = yaml.safe_load((Path(__file__).resolve().parents[1] / "dbt_project.yml").read_text())["vars"]


def var(name, default=None):
    return _VARS.get(name, default)

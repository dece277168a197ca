"""Jinja context for sqlfluff's jinja templater (.sqlfluff library_path): dbt's var() with the
project's own values, so models that compute with vars render to real SQL without a database."""
from pathlib import Path

import yaml
from jinja2 import pass_context

_VARS = yaml.safe_load((Path(__file__).resolve().parents[1] / "dbt_project.yml").read_text())["vars"]


def var(name, default=None):
    return _VARS.get(name, default)


# dbt's adapter.dispatch and return(), enough for the cross-engine macros (macros/cross_engine.sql):
# sqlfluff lints the DuckDB SQL, so dispatch picks the default__ implementation.
class _Adapter:
    @pass_context
    def dispatch(self, context, name, macro_namespace=None):
        return context.get("default__" + name)


adapter = _Adapter()
globals()["return"] = lambda value: value


def env_var(name, default=None):
    return default if default is not None else ""

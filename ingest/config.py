"""Paths and settings read from the environment (names pinned in DESIGN §3)."""
from __future__ import annotations

import os
from pathlib import Path

USER_AGENT = "benchwh/0.1 (Bench Warehouse; +https://github.com/bench-warehouse/bench-warehouse)"

DEFAULT_URLS = {
    "localscore": "https://www.localscore.ai",
    "openrouter": "https://openrouter.ai/api/v1",
    "huggingface": "https://huggingface.co",
    # Our World in Data's export of Ember's yearly electricity data (CC BY 4.0).
    "grid": "https://ourworldindata.org/grapher/carbon-intensity-electricity.csv",
}
URL_ENV = {
    "localscore": "BENCHWH_LOCALSCORE_URL",
    "openrouter": "BENCHWH_OPENROUTER_URL",
    "huggingface": "BENCHWH_HF_URL",
    "grid": "BENCHWH_GRID_URL",
}


def home() -> Path:
    """The warehouse home: env BENCHWH_HOME, default ./warehouse, always absolute."""
    return Path(os.environ.get("BENCHWH_HOME") or "warehouse").expanduser().resolve()


def source_url(source: str) -> str:
    env = URL_ENV.get(source)
    value = os.environ.get(env) if env else None
    return (value or DEFAULT_URLS[source]).rstrip("/")


def max_rps() -> float:
    return float(os.environ.get("BENCHWH_MAX_RPS") or 1.0)


def fetch_deadline_s() -> float:
    """The longest one HTTP request may take, body included (env BENCHWH_FETCH_DEADLINE_S)."""
    return float(os.environ.get("BENCHWH_FETCH_DEADLINE_S") or 300)


def raw_dir() -> Path:
    return home() / "raw"


def landing_dir() -> Path:
    return home() / "landing"


def published_path() -> Path:
    return home() / "benchmarks.duckdb"


def project_root() -> Path:
    return Path(__file__).resolve().parent.parent


def dbt_project_dir() -> Path:
    return project_root() / "dbt_project"


def snapshots_dir() -> Path:
    """Bundled recorded snapshots (written by this project, in the sources' real formats)."""
    return Path(__file__).resolve().parent / "snapshots"

"""`benchwh sources new NAME`: write a new source that is green at once, marked where to fill in.

The templates beside this file are `string.Template`s (`$name`, `$entity`, ...). What they write:
  ingest/sources/<name>.py                               Source subclass + pandera model (found
                                                         by load_sources(), no list to edit)
  ingest/snapshots/<name>/index.json + <entity>_<day>.json  a made-up recorded sample for --offline
  dbt_project/models/staging/<name>/                     _<name>__sources.yml, stg_<name>__<entity>.sql,
                                                         _<name>__models.yml
  dbt_project/models/marts/<name>/                       fct_<name>.sql (contract, primary key) +
                                                         _<name>__models.yml (with a unit test)
  tests/test_source_<name>.py                            the parser against the sample
Every place a person must fill in is marked `TODO(benchwh)`.
"""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).resolve().parent / "templates"
TODO_MARK = "TODO(benchwh)"
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
MAX_NAME = 40
# dbt sources and folders that exist without being a Source (the raw fetch log, quarantine)
RESERVED = {"raw", "quarantine", "landing", "staging", "intermediate", "marts", "site", "audit",
            "seeds", "core", "source", "sources", "scaffold"}


class ScaffoldError(Exception):
    """A NAME that cannot be used; the message is one line for the user."""


@dataclass(frozen=True)
class Plan:
    name: str
    entity: str
    values: dict[str, str]
    files: dict[Path, str]  # target (relative to the project root) -> template file name


def camel(text: str) -> str:
    return "".join(part.capitalize() for part in text.split("_"))


def sql_keywords() -> set[str]:
    """DuckDB's keywords that cannot be a bare identifier everywhere (reserved, type/function, column)."""
    import duckdb

    rows = duckdb.sql("SELECT keyword_name FROM duckdb_keywords() "
                      "WHERE keyword_category <> 'unreserved'").fetchall()
    return {r[0].lower() for r in rows}


def check_identifier(value: str, what: str, example: str) -> None:
    if not NAME_RE.fullmatch(value or ""):
        raise ScaffoldError(f"invalid {what} {value!r}: use snake_case (lowercase letters, digits and single "
                            f"underscores, starting with a letter), e.g. {example}")
    if len(value) > MAX_NAME:
        raise ScaffoldError(f"invalid {what} {value!r}: at most {MAX_NAME} characters")
    if keyword.iskeyword(value) or value in sql_keywords():
        raise ScaffoldError(f"invalid {what} {value!r}: it is a Python or SQL keyword, pick another word")


def plan(name: str, entity: str = "records", root: Path | None = None,
         recorded_at: datetime | None = None) -> Plan:
    """Check NAME and ENTITY and say which files would be written (nothing is written)."""
    from ingest import config
    from ingest.source import load_sources

    root = Path(root or config.project_root())
    check_identifier(name, "source name", "gpu_prices")
    check_identifier(entity, "entity name", "offers")
    if name in RESERVED:
        raise ScaffoldError(f"source name {name!r} is reserved by the project, pick another")
    registered = load_sources()
    if root.resolve() != Path(config.project_root()).resolve():
        # another tree (a test's temporary copy): this project's own source modules are not its
        # sources, only the installed packages' entry points are shared
        registered = {n: s for n, s in registered.items()
                      if not type(s).__module__.startswith("ingest.sources.")}
    if name in registered:
        where = type(registered[name]).__module__
        raise ScaffoldError(f"source name {name!r} is taken (by {where})")

    recorded = (recorded_at or datetime.now(timezone.utc)).astimezone(timezone.utc)
    payload_file = f"{entity}_{recorded:%Y-%m-%d}.json"
    values = {
        "name": name,
        "upper_name": name.upper(),
        "entity": entity,
        "title": name.replace("_", " ").capitalize(),
        "model_class": camel(name) + camel(entity) + "Schema",
        "source_class": camel(name) + "Source",
        "staging_model": f"stg_{name}__{entity}",
        "mart_model": f"fct_{name}",
        "recorded_at": f"{recorded:%Y-%m-%dT%H:%M:%SZ}",
        "payload_file": payload_file,
    }
    staging = Path("dbt_project/models/staging") / name
    marts = Path("dbt_project/models/marts") / name
    files = {
        Path("ingest/sources") / f"{name}.py": "source.py.tmpl",
        Path("ingest/snapshots") / name / "index.json": "sample_index.json.tmpl",
        Path("ingest/snapshots") / name / payload_file: "sample_payload.json.tmpl",
        staging / f"_{name}__sources.yml": "sources.yml.tmpl",
        staging / f"{values['staging_model']}.sql": "staging.sql.tmpl",
        staging / f"_{name}__models.yml": "staging_models.yml.tmpl",
        marts / f"{values['mart_model']}.sql": "mart.sql.tmpl",
        marts / f"_{name}__models.yml": "mart_models.yml.tmpl",
        Path("tests") / f"test_source_{name}.py": "test.py.tmpl",
    }
    for folder in (Path("ingest/snapshots") / name, staging, marts):
        if (root / folder).exists():
            raise ScaffoldError(f"source name {name!r} is taken: {folder} exists")
    for target in files:
        if (root / target).exists():
            raise ScaffoldError(f"source name {name!r} is taken: {target} exists")
    models = root / "dbt_project" / "models"
    for model in (values["staging_model"], values["mart_model"]):
        clash = next(models.rglob(f"{model}.sql"), None) if models.is_dir() else None
        if clash is not None:
            raise ScaffoldError(f"source name {name!r} is taken: dbt model {model} exists ({clash.relative_to(root)})")
    return Plan(name=name, entity=entity, values=values, files=files)


def render(template: str, values: dict[str, str]) -> str:
    return Template((TEMPLATES / template).read_text(encoding="utf-8")).substitute(values)


def write(p: Plan, root: Path | None = None) -> list[Path]:
    """Write the planned files (all or none). Returns the written paths, relative to root."""
    from ingest import config

    root = Path(root or config.project_root())
    rendered = {target: render(tmpl, p.values) for target, tmpl in p.files.items()}
    written: list[Path] = []
    try:
        for target, text in rendered.items():
            path = root / target
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "x", encoding="utf-8") as fh:  # never overwrite
                fh.write(text)
            written.append(target)
    except BaseException:
        for target in written:
            (root / target).unlink(missing_ok=True)
        raise
    return written


def todo_lines(root: Path, paths: list[Path]) -> list[tuple[Path, int, str]]:
    """Every `TODO(benchwh)` place in the written files: (path, line number, text)."""
    out = []
    for rel in paths:
        for i, line in enumerate((root / rel).read_text(encoding="utf-8").splitlines(), 1):
            if TODO_MARK in line:
                out.append((rel, i, line.strip()))
    return out

"""The dbt layers only look down (dbt_project/models/README.md): each model refs only the layers
its folder may read, published models carry enforced contracts, and the trust rule is written once."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "dbt_project"

# layer -> the layers its models may ref (docs/architecture.md "dbt", models/README.md)
ALLOWED = {
    "staging": {"source"},
    "intermediate": {"staging", "intermediate", "seed"},
    "marts/derived": {"intermediate", "marts", "marts/derived", "seed"},
    "marts": {"staging", "intermediate", "marts", "marts/derived", "seed"},
    "site": {"marts", "seed"},
    "audit": {"staging", "intermediate", "marts", "seed"},
}
PUBLISHED = {"marts", "site", "audit"}


@pytest.fixture(scope="module")
def manifest() -> dict:
    """dbt's parse of the project as it is now (prepared when any project file changed)."""
    from orchestration.manifest import prepare_manifest

    return json.loads(prepare_manifest().read_text())


def layer(node: dict) -> str:
    if node["resource_type"] in ("source", "seed"):
        return node["resource_type"]
    parts = Path(node["original_file_path"]).parts  # models/<layer>/...
    return "marts/derived" if parts[1:3] == ("marts", "derived") else parts[1]


def models(manifest: dict) -> list[dict]:
    return [n for n in manifest["nodes"].values() if n["resource_type"] == "model"]


def test_every_model_refs_only_the_layers_below_it(manifest):
    wrong = []
    for node in models(manifest):
        here = layer(node)
        assert here in ALLOWED, f"{node['original_file_path']}: no layer rule for {here}"
        for dep in node["depends_on"]["nodes"]:
            upstream = manifest["nodes"].get(dep) or manifest["sources"][dep]
            if layer(upstream) not in ALLOWED[here]:
                wrong.append(f"{node['name']} ({here}) reads {upstream['name']} ({layer(upstream)})")
    assert not wrong, "models read a layer they may not (move them, e.g. to marts/derived):\n" + "\n".join(wrong)


def test_published_models_are_contracted_tables_and_derived_ones_are_dropped(manifest):
    from publish.publish import PUBLISHED_SCHEMAS

    assert set(PUBLISHED_SCHEMAS) == PUBLISHED
    for node in models(manifest):
        here, config = layer(node), node["config"]
        if here.split("/")[0] in PUBLISHED and here != "marts/derived":
            assert config["materialized"] == "table" and config["contract"]["enforced"], node["name"]
            assert node["schema"] == here
        else:
            # never published: a view (or the union table) in a schema the publish's copy drops
            assert node["schema"] in {"staging", "intermediate", "derived"}, node["name"]
            assert node["schema"] not in PUBLISHED_SCHEMAS, node["schema"]
        if here == "marts/derived":
            assert node["name"].startswith("drv_") and config["materialized"] == "view", node["name"]


def test_the_trust_rule_is_written_once():
    sql = {p: p.read_text() for p in (PROJECT / "models").rglob("*.sql")}
    rule = re.compile(r"trust\s*(as varchar\)\s*)?in\s*\(\s*'signed',\s*'source'\s*\)")
    places = [str(p.relative_to(PROJECT)) for p, text in sql.items() if rule.search(text)]
    assert places == ["models/staging/runs/stg_runs__runs.sql"], places

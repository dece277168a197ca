"""The publish asset: runs after every dbt model and test of the run succeeded."""

import dagster as dg

from ingest.raw_store import RawStore
from ingest import config
from ingest.source import load_sources
from orchestration.dbt_assets import dbt_build
from cli.progress import progress
from publish.publish import EXPORTED_SCHEMAS, PublishError, publish
from orchestration.resources import build_dir, build_path

PUBLISH_KEY = dg.AssetKey(["publish", "benchmarks_duckdb"])


def sources_meta() -> dict:
    """License, attribution, vintage and last fetch of each source, for exports/manifest.json."""
    from ingest.demo import demo_sources

    store = RawStore(config.raw_dir())
    sources = load_sources()
    demo = set(demo_sources(store, sources))
    meta = {}
    for name, src in sources.items():
        fetched = [e.fetched_at for e in store.entries(name)]
        meta[name] = {
            "license": src.license,
            "attribution": src.attribution,
            "vintage": getattr(src, "vintage", None),
            "last_fetch": max(fetched) if fetched else None,
            # replayed from the bundled recordings (`refresh --offline`): made-up demo rows
            "demo": name in demo,
        }
    return meta


@dg.asset(key=PUBLISH_KEY, deps=list(dbt_build.keys), group_name="publish", kinds={"duckdb", "parquet"},
          description="Atomic swap of the audited build onto warehouse/benchmarks.duckdb, exports and history.")
def benchmarks_duckdb(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    path = build_path(context.run_id)
    if not path.exists():
        raise dg.Failure(description=(
            f"refused: this run built nothing to publish (no {path.name}): publish only follows the dbt build "
            "of the same run. Launch the `refresh` job (live) or `refresh_offline` (recordings), or \"Materialize all\"."))
    try:
        result = publish(path, sources_meta(), progress)
    except PublishError as exc:
        raise dg.Failure(description=f"publish refused: {exc}") from None
    finally:
        target = build_dir() / f"{context.run_id}-target"
        import shutil
        shutil.rmtree(target, ignore_errors=True)
    from orchestration.sensors import complete_inbox_reports

    complete_inbox_reports(config.published_path(), log=progress)
    from publish.report import resolution_report  # the same report `benchwh status` prints
    resolution = resolution_report(config.published_path()) or {"shares": [], "top_unresolved": []}
    return dg.MaterializeResult(metadata={
        "version": result["version"],
        "unchanged": bool(result.get("unchanged")),
        "tables": len(result["tables"]),
        "tables_exported": sum(1 for t in result["tables"] if t.split(".")[0] in EXPORTED_SCHEMAS),
        "rows": sum(t["rows"] for t in result["tables"].values()),
        "resolved_share_by_source": dg.MetadataValue.json(resolution["shares"]),
        "top_unresolved_names": dg.MetadataValue.json(resolution["top_unresolved"]),
    })

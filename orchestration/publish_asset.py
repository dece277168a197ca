"""The publish asset: runs after every dbt model and test of the run succeeded."""

import dagster as dg

from ingest.raw_store import RawStore
from ingest import config
from ingest.source import load_sources
from orchestration.dbt_assets import dbt_build
from orchestration.progress import progress
from orchestration.publish import PublishError, publish
from orchestration.resources import build_dir, build_path

PUBLISH_KEY = dg.AssetKey(["publish", "benchmarks_duckdb"])


def sources_meta() -> dict:
    """License, attribution, vintage and last fetch of each source, for exports/manifest.json."""
    store = RawStore(config.raw_dir())
    meta = {}
    for name, src in load_sources().items():
        fetched = [e.fetched_at for e in store.entries(name)]
        meta[name] = {
            "license": src.license,
            "attribution": src.attribution,
            "vintage": getattr(src, "vintage", None),
            "last_fetch": max(fetched) if fetched else None,
        }
    return meta


@dg.asset(key=PUBLISH_KEY, deps=list(dbt_build.keys), group_name="publish", kinds={"duckdb", "parquet"},
          description="Atomic swap of the audited build onto warehouse/benchmarks.duckdb, exports and history.")
def benchmarks_duckdb(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    path = build_path(context.run_id)
    if not path.exists():
        raise dg.Failure(description=f"no build file {path.name} to publish")
    try:
        result = publish(path, sources_meta(), progress)
    except PublishError as exc:
        raise dg.Failure(description=f"publish refused: {exc}") from None
    finally:
        target = build_dir() / f"{context.run_id}-target"
        import shutil
        shutil.rmtree(target, ignore_errors=True)
    from orchestration.cli import resolution_report  # the same report `benchwh status` prints
    resolution = resolution_report(config.published_path()) or {"shares": [], "top_unresolved": []}
    return dg.MaterializeResult(metadata={
        "version": result["version"],
        "tables": len(result["tables"]),
        "rows": sum(t["rows"] for t in result["tables"].values()),
        "resolved_share_by_source": dg.MetadataValue.json(resolution["shares"]),
        "top_unresolved_names": dg.MetadataValue.json(resolution["top_unresolved"]),
    })

"""The publish asset: runs after every dbt model and test of the run succeeded."""

import dagster as dg

from orchestration.progress import progress
from ingest import config
from orchestration.dbt_assets import PUBLISH_KEY, dbt_build, partial_selection_reason
from orchestration.steps import die_with_run_process
from orchestration.resources import build_path
from publish.inputs import sidecar
from publish.publish import EXPORTED_SCHEMAS, PublishError, publish
from publish.report import sources_meta


@dg.asset(key=PUBLISH_KEY, deps=list(dbt_build.keys), group_name="publish", kinds={"duckdb", "parquet"},
          description="Atomic swap of the audited build onto warehouse/benchmarks.duckdb, exports and history.")
def benchmarks_duckdb(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    die_with_run_process()
    run_id = context.run.run_id
    path = build_path(run_id)
    # the run's whole selection (None: the whole job), not only this step's own asset
    selection = context.run.asset_selection
    refused = partial_selection_reason(set(selection)) if selection is not None else None
    if refused:  # publish selected without the build (a UI launch)
        raise dg.Failure(description=refused)
    if not path.exists():
        raise dg.Failure(description=(
            f"refused: this run built nothing to publish (no {path.name}): publish only follows the dbt build "
            "of the same run. Launch the `refresh` job (live) or `refresh_offline` (recordings), or \"Materialize all\"."))
    try:
        inputs = sidecar(path).read_text().strip() if sidecar(path).exists() else None
        result = publish(path, sources_meta(), progress, inputs=inputs)
    except PublishError as exc:
        raise dg.Failure(description=f"publish refused: {exc}") from None
    finally:
        sidecar(path).unlink(missing_ok=True)
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

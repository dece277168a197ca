import dagster as dg

# Never two refreshes at once: the run queue limits this tag to 1 (see dagster.yaml written by
# orchestration.instance), and publish holds a lock file in the warehouse home as well.
refresh_job = dg.define_asset_job(
    name="refresh",
    selection=dg.AssetSelection.all(),
    description="All sources, then dbt build and tests, then atomic publish.",
    tags={"benchwh/serial": "refresh"},
)

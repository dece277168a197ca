"""One Definitions object for `benchwh dev` (dagster dev -m orchestration.definitions) and the benchwh CLI."""
import dagster as dg

from orchestration.assets import landing_assets
from orchestration.backfill import backfill_job
from orchestration.dbt_assets import dbt_build
from orchestration.jobs import refresh_job, refresh_offline_job
from orchestration.publish_asset import benchmarks_duckdb
from orchestration.resources import dbt_resource
from orchestration.schedules import schedules
from orchestration.sensors import sensors

defs = dg.Definitions(
    assets=[*landing_assets(), dbt_build, benchmarks_duckdb],
    jobs=[refresh_job, refresh_offline_job, backfill_job()],
    schedules=schedules,
    sensors=sensors,
    resources={"dbt": dbt_resource()},
)

import dagster as dg

from orchestration.jobs import refresh_job
from orchestration.tags import fetch_tags

# Nightly in UTC, after OpenRouter's and LocalScore's day has turned over.
nightly_refresh = dg.ScheduleDefinition(
    name="nightly_refresh", job=refresh_job, cron_schedule="0 3 * * *", execution_timezone="UTC",
    tags=fetch_tags(None, offline=False),
    description="Every source, then build, audit and publish.",
)

schedules = [nightly_refresh]

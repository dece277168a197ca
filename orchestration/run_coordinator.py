"""The Dagster run coordinator of benchwh's instance (orchestration/instance.py writes dagster.yaml)."""
from __future__ import annotations

from dagster._core.run_coordinator import QueuedRunCoordinator


class GuardedRunCoordinator(QueuedRunCoordinator):
    """The queued coordinator (one refresh at a time) that refuses, before it starts, a run that
    cannot work: some dbt models without the rest, or publish without the build. The UI offers
    both; the run shows as failed with the reason and no step runs."""

    def submit_run(self, context):
        run = context.dagster_run
        if run.asset_selection:
            from orchestration.dbt_assets import partial_selection_reason

            reason = partial_selection_reason(set(run.asset_selection))
            if reason:
                self._instance.report_run_failed(run, message=reason)
                return self._instance.get_run_by_id(run.run_id)
        return super().submit_run(context)

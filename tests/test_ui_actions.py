"""What the Dagster UI offers works or is refused with its reason before any build work."""
import dagster as dg

from orchestration.definitions import defs

SUMMARY = dg.AssetKey(["marts", "fct_speed_summary"])
PUBLISH = dg.AssetKey(["publish", "benchmarks_duckdb"])


def failure_of(result) -> str:
    failed = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failed, "the run did not fail"
    data = failed[0].event_specific_data
    return data.user_failure_data.description if data.user_failure_data else data.error.message


def materialize(keys, home):
    job = defs.resolve_implicit_global_asset_job_def()
    with dg.DagsterInstance.ephemeral() as instance:
        return job.execute_in_process(asset_selection=keys, instance=instance, raise_on_error=False)


def test_materializing_one_dbt_model_is_refused_with_the_reason(home):
    result = materialize([SUMMARY], home)
    assert not result.success
    reason = failure_of(result)
    assert reason.startswith("refused: marts/fct_speed_summary cannot be built alone")
    assert "refresh_offline" in reason
    # refused before dbt started: no build file, no target folder left behind
    assert not (home / "build").exists() or not any((home / "build").iterdir())


def test_publishing_without_a_build_is_refused_with_the_reason(home):
    result = materialize([PUBLISH], home)
    assert not result.success
    assert failure_of(result).startswith("refused: publish alone has nothing to publish")
    assert not (home / "benchmarks.duckdb").exists()


def test_partial_selections_are_named():
    from orchestration.dbt_assets import dbt_build, partial_selection_reason

    assert partial_selection_reason({SUMMARY}).startswith("refused: marts/fct_speed_summary cannot be built alone")
    assert partial_selection_reason({PUBLISH}).startswith("refused: publish alone has nothing to publish")
    everything = set(dbt_build.keys) | {PUBLISH}
    assert partial_selection_reason(everything) is None
    assert partial_selection_reason({dg.AssetKey(["landing", "grid", "intensities"])}) is None  # landing alone works


def test_offline_is_a_job_to_launch_not_a_hidden_tag():
    offline = defs.resolve_job_def("refresh_offline")
    live = defs.resolve_job_def("refresh")
    assert offline.tags["benchwh/offline"] == "1" and "benchwh/offline" not in live.tags
    # both are queued one at a time with the CLI's refreshes
    assert offline.tags["benchwh/serial"] == live.tags["benchwh/serial"] == "refresh"
    assert "recording" in offline.description

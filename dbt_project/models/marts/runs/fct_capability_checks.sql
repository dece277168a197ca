-- One row per capability check of a run (as reported in its signed run file), keyed to the run's
-- build, machine and contributor.

with capabilities as (
    select * from {{ ref('stg_runs__capabilities') }}
),

runs as (
    select * from {{ ref('int_runs_deduplicated') }}
),

speed_runs as (
    select source, source_run_id, build_id, model_id, hardware_id, machine_id, is_duplicate
    from {{ ref('fct_speed_runs') }}
),

final as (
    select
        capabilities.source,
        capabilities.source_run_id,
        capabilities.capability,
        capabilities.has_passed,
        speed_runs.build_id,
        speed_runs.model_id,
        speed_runs.hardware_id,
        speed_runs.machine_id,
        case when runs.trust = 'signed' then runs.keyid end as keyid,
        case when runs.trust = 'signed' then runs.contributor end as contributor,
        runs.raw_hardware_name,
        runs.raw_model_name,
        runs.raw_quant,
        runs.engine,
        runs.engine_version,
        runs.trust,
        runs.is_countable,
        coalesce(speed_runs.is_duplicate, false) as is_duplicate,
        runs.measured_at
    from capabilities
    inner join runs
        on capabilities.source = runs.source
        and capabilities.source_run_id = runs.source_run_id
        and capabilities.raw_sha256 = runs.raw_sha256
    left join speed_runs
        on speed_runs.source = capabilities.source
        and speed_runs.source_run_id = capabilities.source_run_id
)

select * from final

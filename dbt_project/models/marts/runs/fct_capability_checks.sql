-- One row per capability check of a run (as reported in its signed run file).

with capabilities as (
    select * from {{ ref('stg_runs__capabilities') }}
),

runs as (
    select * from {{ ref('int_runs_deduplicated') }}
),

final as (
    select
        capabilities.source,
        capabilities.source_run_id,
        capabilities.capability,
        capabilities.has_passed,
        runs.raw_hardware_name,
        runs.raw_model_name,
        runs.raw_quant,
        runs.engine,
        runs.engine_version,
        runs.trust,
        runs.created_at as measured_at
    from capabilities
    inner join runs
        on capabilities.source = runs.source
        and capabilities.source_run_id = runs.source_run_id
        and capabilities.raw_sha256 = runs.raw_sha256
)

select * from final

{{ config(materialized='table') }}
-- One row per run of the deduplicated samples: what fct_speed_measurements needs to flag
-- resubmissions and to prefer a configuration. A table, not CTEs of the mart: the runs are read by
-- two windows there, and a CTE read twice is held in memory by DuckDB (at 10M samples the mart
-- ran out of its 1 GB now and then, and took 26 s where this table and the mart take 16).
with runs as (
    select
        source,
        source_run_id,
        -- resubmissions are told apart in time: the measurement's, else when the file was received
        min(coalesce(measured_at, received_at)) as run_at,
        any_value(hardware_id) as hardware_id,
        any_value(build_id) as build_id,
        any_value(engine) as engine,
        any_value(engine_version) as engine_version,
        any_value(config_id) as config_id,
        bool_or(coalesce(is_cpu_fallback, false) or coalesce(is_partial_offload, false)) as is_degraded,
        bool_and(is_countable) as is_countable,
        -- fingerprint of every (test, metrics) of the run, by hashing (no number-to-text work)
        count(*) as n_samples,
        bit_xor(hash(sample_index, test_name, n_prompt, n_gen, gen_tps, prompt_tps, ttft_ms, turn_time_ms))
            as metrics_fingerprint
    from {{ ref('int_speed_samples_deduplicated') }}
    group by source, source_run_id
)

select
    source,
    source_run_id,
    hardware_id,
    build_id,
    engine,
    config_id,
    is_degraded,
    is_countable,
    -- an identical run on the same machine and build within 30 minutes of the one before it
    coalesce(
        run_at - lag(run_at) over (
            partition by hardware_id, build_id, engine, engine_version, config_id, n_samples, metrics_fingerprint
            order by run_at, source, source_run_id
        ) <= interval 30 minute,
        false
    ) as is_resubmission
from runs

-- One row per repetition-level sample of one run (a LocalScore test is one sample), all
-- sources, all trust levels. Two kinds of duplicates:
--   * the same run seen twice (paging overlap, a re-fetched page, the same file landed twice):
--     one row per (source, source_run_id, sample_index) is kept;
--   * identical re-submissions: another run on the same hardware, model, quant and runtime whose
--     metrics are identical test for test, within 30 minutes of the previous one: kept, flagged
--     is_duplicate (with the sources' own duplicate flags) and left out of fct_speed_summary.
-- The deduplication is int_speed_samples_deduplicated's, the run-level flags int_speed_runs'.
with samples as (
    select * from {{ ref('int_speed_samples_deduplicated') }}
),

-- read twice: not materialized, so DuckDB scans the table rather than holding a copy
runs as {{ not_materialized() }} (
    select * from {{ ref('int_speed_runs') }}
),

-- Where a build was measured on one machine with several configurations, the one a page shows by
-- default: trusted before unverified, full offload before a CPU fallback or partial offload, then
-- the most runs. Small: one row per run, grouped.
preferred_configs as (
    select
        hardware_id,
        build_id,
        engine,
        config_id,
        row_number() over (
            partition by hardware_id, build_id, engine
            order by bool_or(is_countable) desc, bool_or(is_degraded), count(*) desc, config_id
        ) = 1 as is_preferred_config
    from runs
    group by hardware_id, build_id, engine, config_id
)

select
    {{ md5_hex("s.source || '|' || s.source_run_id || '|' || s.sample_index") }} as measurement_id,
    s.source,
    s.source_run_id,
    s.sample_index,
    s.hardware_id,
    s.model_id,
    s.build_id,
    s.quant,
    s.engine,
    s.engine_version,
    s.config_id,
    s.is_cpu_fallback,
    s.is_partial_offload,
    coalesce(p.is_preferred_config, true) as is_preferred_config,
    s.test_name,
    s.n_prompt,
    s.n_gen,
    s.gen_tps,
    s.prompt_tps,
    s.ttft_ms,
    s.turn_time_ms,
    s.is_turn_time_derived,
    s.power_w,
    s.energy_j,
    s.power_method,
    s.peak_memory_bytes,
    -- sources say "GB" but report binary figures (23.99 for a 24 GiB card): named for what they are
    s.hardware_memory_gb as hardware_memory_gib,
    s.country,
    s.measured_at,
    s.received_at,
    s.trust,
    s.is_countable,
    coalesce(s.is_duplicate, false) or r.is_resubmission as is_duplicate,
    r.is_resubmission,
    s.raw_hardware_name,
    s.raw_model_name,
    s.raw_quant,
    s.model_file_name,
    s.machine_id,
    s.keyid,
    s.contributor,
    s.protocol_sampling,
    s.protocol_repetitions
from samples as s
inner join runs as r using (source, source_run_id)
left join preferred_configs as p
    on p.hardware_id is not distinct from s.hardware_id
    and p.build_id is not distinct from s.build_id
    and p.engine is not distinct from s.engine
    and p.config_id is not distinct from s.config_id

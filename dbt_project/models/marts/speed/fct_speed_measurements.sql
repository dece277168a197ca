-- One row per repetition-level sample of one run (a LocalScore test is one sample), all
-- sources, all trust levels. Two kinds of duplicates:
--   * the same run seen twice (paging overlap, a re-fetched page, the same file landed twice):
--     one row per (source, source_run_id, sample_index) is kept;
--   * identical re-submissions: another run on the same hardware, model, quant and runtime whose
--     metrics are identical test for test, within 30 minutes of the previous one: kept, flagged
--     is_duplicate (with the sources' own duplicate flags) and left out of fct_speed_summary.
-- Only the samples of a key seen more than once go through the keep-first window: over every
-- wide row that window (and a CTE of the samples read twice) cost more than finding those keys.
-- The samples table is named in each branch, not through a CTE, so DuckDB does not copy it, and
-- one_per_sample, read twice, is not materialized (DuckDB would hold all samples in memory).
with repeated_keys as (
    select source, source_run_id, sample_index
    from {{ ref('int_speed_samples_resolved') }}
    group by source, source_run_id, sample_index
    having count(*) > 1
),

one_per_sample as {{ not_materialized() }} (
    select s.*
    from {{ ref('int_speed_samples_resolved') }} as s
    where not exists (
        select 1 from repeated_keys as k
        where k.source is not distinct from s.source
            and k.source_run_id is not distinct from s.source_run_id
            and k.sample_index is not distinct from s.sample_index
    )
    union all
    {% call keep_first('source, source_run_id, sample_index', 'measured_at, test_name, gen_tps, prompt_tps, ttft_ms') -%}
        select s.*
        from {{ ref('int_speed_samples_resolved') }} as s
        where exists (
            select 1 from repeated_keys as k
            where k.source is not distinct from s.source
                and k.source_run_id is not distinct from s.source_run_id
                and k.sample_index is not distinct from s.sample_index
        )
    {%- endcall %}
),

runs as (
    select
        source,
        source_run_id,
        -- resubmissions are told apart in time: the measurement's, else when the file was received
        min(coalesce(measured_at, received_at)) as run_at,
        any_value(hardware_id) as hardware_id,
        any_value(model_id) as model_id,
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
    from one_per_sample
    group by source, source_run_id
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
),

resubmissions as (
    select
        source,
        source_run_id,
        coalesce(
            run_at - lag(run_at) over (
                partition by hardware_id, build_id, engine, engine_version, config_id, n_samples, metrics_fingerprint
                order by run_at, source, source_run_id
            ) <= interval 30 minute,
            false
        ) as is_resubmission
    from runs
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
from one_per_sample as s
inner join resubmissions as r using (source, source_run_id)
left join preferred_configs as p
    on p.hardware_id is not distinct from s.hardware_id
    and p.build_id is not distinct from s.build_id
    and p.engine is not distinct from s.engine
    and p.config_id is not distinct from s.config_id

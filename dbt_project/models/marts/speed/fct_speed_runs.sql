-- One row per run of fct_speed_measurements: where, what and by whom it was measured (machine,
-- build, engine, signing key and contributor), the protocol it followed, and the source's own
-- run averages where the source publishes them (LocalScore: avg gen/prompt tok/s, avg TTFT,
-- performance score; these are not the medians of the run's tests).
with measurements as {{ not_materialized() }} (
    select * from {{ ref('fct_speed_measurements') }}
),

-- Each run's median speeds from a window sort of its samples (median_of_sorted), not median():
-- a holistic aggregate keeps every group's values in memory and ran out of a 1 GB limit over
-- the 1.1M runs of scale 10, where a window sort spills.
ranked as (
    select
        source,
        source_run_id,
        gen_tps,
        prompt_tps,
        row_number() over (partition by source, source_run_id order by gen_tps nulls last) as gen_tps_position,
        count(gen_tps) over (partition by source, source_run_id) as n_gen_tps,
        row_number() over (partition by source, source_run_id order by prompt_tps nulls last) as prompt_tps_position,
        count(prompt_tps) over (partition by source, source_run_id) as n_prompt_tps
    from measurements
),

medians as (
    select
        source,
        source_run_id,
        {{ median_of_sorted('gen_tps', 'gen_tps_position', 'n_gen_tps') }} as gen_tps_median,
        {{ median_of_sorted('prompt_tps', 'prompt_tps_position', 'n_prompt_tps') }} as prompt_tps_median
    from ranked
    group by source, source_run_id
),

runs as (
    select
        source,
        source_run_id,
        {{ any_value_ordered("machine_id", "sample_index") }} as machine_id,
        {{ any_value_ordered("hardware_id", "sample_index") }} as hardware_id,
        {{ any_value_ordered("model_id", "sample_index") }} as model_id,
        {{ any_value_ordered("build_id", "sample_index") }} as build_id,
        {{ any_value_ordered("quant", "sample_index") }} as quant,
        coalesce({{ any_value_ordered("engine", "sample_index") }}, 'unknown') as engine,
        {{ any_value_ordered("engine_version", "sample_index") }} as engine_version,
        {{ any_value_ordered("keyid", "sample_index") }} as keyid,
        {{ any_value_ordered("contributor", "sample_index") }} as contributor,
        {{ any_value_ordered("trust", "sample_index") }} as trust,
        {{ any_value_ordered("is_countable", "sample_index") }} as is_countable,
        {{ any_value_ordered("protocol_sampling", "sample_index") }} as protocol_sampling,
        {{ any_value_ordered("protocol_repetitions", "sample_index") }} as protocol_repetitions,
        {{ string_agg_distinct("test_name", ", ") }} as test_names,
        bool_or(is_duplicate) as is_duplicate,
        min(measured_at) as measured_at,
        count(*) as n_samples,
        max(peak_memory_bytes) as peak_memory_bytes
    from measurements
    group by source, source_run_id
)

select
    runs.*,
    medians.gen_tps_median,
    medians.prompt_tps_median,
    averages.avg_gen_tps as source_avg_gen_tps,
    averages.avg_prompt_tps as source_avg_prompt_tps,
    averages.avg_ttft_ms as source_avg_ttft_ms,
    averages.performance_score as source_performance_score
from runs
left join medians
    on medians.source = runs.source and medians.source_run_id = runs.source_run_id
left join {{ ref('int_localscore__run_averages') }} as averages
    on averages.source = runs.source and averages.source_run_id = runs.source_run_id

-- Reference page "measured speeds by GPU" (model-page-llama-3.2-1b.txt): per build, machine
-- (hardware) and engine, the median generation and prompt speeds over every signed or source
-- measurement, how many runs, which sources and tests, the run ids behind the row (for links to
-- the source's own result pages) and, where the source is LocalScore, LocalScore's own run
-- averages (the median over the row's runs of each run's avg gen/prompt tok/s, avg TTFT and
-- performance score: what LocalScore prints, not the median of its tests).
with measurements as (
    select * from {{ ref('fct_speed_measurements') }}
    -- one configuration per build and machine (fct_speed_measurements.is_preferred_config): medians never pool settings
    where is_countable and not is_duplicate and is_preferred_config and build_id is not null
),

run_averages as (
    select
        build_id,
        hardware_id,
        engine,
        median(source_avg_gen_tps) as localscore_avg_gen_tps,
        median(source_avg_prompt_tps) as localscore_avg_prompt_tps,
        median(source_avg_ttft_ms) as localscore_avg_ttft_ms,
        median(source_performance_score) as localscore_performance_score,
        count(*) as n_localscore_runs,
        {{ first_by('source_run_id', ['measured_at desc', 'source_run_id desc']) }} as latest_localscore_run_id
    from {{ ref('fct_speed_runs') }}
    where source = 'localscore' and trust = 'source' and not is_duplicate and build_id is not null
    group by build_id, hardware_id, engine
),

rows as (
    select
        measurements.build_id,
        measurements.hardware_id,
        coalesce(measurements.engine, 'unknown') as engine,
        any_value(measurements.model_id) as model_id,
        any_value(model.name) as model_name,
        any_value(measurements.quant) as quant,
        any_value(hardware.name) as hardware_name,
        median(measurements.gen_tps) as gen_tps_median,
        median(measurements.prompt_tps) as prompt_tps_median,
        count(distinct measurements.source || '|' || measurements.source_run_id) as n_runs,
        count(*) as n_samples,
        count(distinct measurements.test_name) as n_tests,
        {{ string_agg_distinct("measurements.source", ", ") }} as sources,
        {{ string_agg_distinct("measurements.test_name", ", ") }} as test_names,
        {{ string_agg_distinct("measurements.source || ':' || measurements.source_run_id", ", ") }} as run_ids,
        max(measurements.measured_at) as last_measured_at
    from measurements
    left join {{ ref('dim_hardware') }} as hardware on hardware.hardware_id = measurements.hardware_id
    left join {{ ref('dim_model') }} as model on model.model_id = measurements.model_id
    group by measurements.build_id, measurements.hardware_id, coalesce(measurements.engine, 'unknown')
)

select
    rows.*,
    run_averages.localscore_avg_gen_tps,
    run_averages.localscore_avg_prompt_tps,
    run_averages.localscore_avg_ttft_ms,
    run_averages.localscore_performance_score,
    cast(coalesce(run_averages.n_localscore_runs, 0) as bigint) as n_localscore_runs,
    builds.quantizer,
    coalesce(rows.model_name, rows.model_id) || ' (' || rows.quant || coalesce(' · ' || builds.quantizer, '') || ', '
    || rows.engine || ')' as entry_label,
    -- the row's LocalScore result page (its latest run), where LocalScore measured it
    '{{ var("localscore_result_url") }}' || run_averages.latest_localscore_run_id as source_url
from rows
left join {{ ref('dim_model_build') }} as builds on builds.build_id = rows.build_id
left join run_averages
    on run_averages.build_id = rows.build_id
    and run_averages.hardware_id = rows.hardware_id
    and run_averages.engine = rows.engine

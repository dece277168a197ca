-- Reference page "measured speeds by GPU" (model-page-llama-3.2-1b.txt): per build, machine
-- (hardware) and engine, the median generation and prompt speeds over every signed or source
-- measurement, how many runs, which sources and tests, the run ids behind the row (for links to
-- the source's own result pages) and, where the source is LocalScore, LocalScore's own run
-- averages (the median over the row's runs of each run's avg gen/prompt tok/s, avg TTFT and
-- performance score: what LocalScore prints, not the median of its tests).
-- Medians from window sorts (median_of_sorted) and distinct values from distinct rows, not
-- median() and lists per group: those are holistic and held every group in memory (out of 1 GB
-- at scale 10, docs/dbt.md). measurements is read three times, so computed where read.
with measurements as {{ not_materialized() }} (
    select
        build_id,
        hardware_id,
        coalesce(engine, 'unknown') as engine,
        model_id,
        quant,
        source,
        source_run_id,
        test_name,
        gen_tps,
        prompt_tps,
        measured_at
    from {{ ref('fct_speed_measurements') }}
    -- one configuration per build and machine (fct_speed_measurements.is_preferred_config): medians never pool settings
    where is_countable and not is_duplicate and is_preferred_config and build_id is not null
),

localscore_runs as (
    select
        build_id,
        hardware_id,
        engine,
        source_run_id,
        measured_at,
        source_avg_gen_tps,
        source_avg_prompt_tps,
        source_avg_ttft_ms,
        source_performance_score,
        row_number() over (
            partition by build_id, hardware_id, engine
            order by source_avg_gen_tps nulls last
        ) as source_avg_gen_tps_position,
        count(source_avg_gen_tps) over (partition by build_id, hardware_id, engine) as n_source_avg_gen_tps,
        row_number() over (
            partition by build_id, hardware_id, engine
            order by source_avg_prompt_tps nulls last
        ) as source_avg_prompt_tps_position,
        count(source_avg_prompt_tps) over (partition by build_id, hardware_id, engine) as n_source_avg_prompt_tps,
        row_number() over (
            partition by build_id, hardware_id, engine
            order by source_avg_ttft_ms nulls last
        ) as source_avg_ttft_ms_position,
        count(source_avg_ttft_ms) over (partition by build_id, hardware_id, engine) as n_source_avg_ttft_ms,
        row_number() over (
            partition by build_id, hardware_id, engine
            order by source_performance_score nulls last
        ) as source_performance_score_position,
        count(source_performance_score) over (partition by build_id, hardware_id, engine) as n_source_performance_score
    from {{ ref('fct_speed_runs') }}
    where source = 'localscore' and trust = 'source' and not is_duplicate and build_id is not null
),

run_averages as (
    select
        build_id,
        hardware_id,
        engine,
        {{ median_of_sorted('source_avg_gen_tps', 'source_avg_gen_tps_position', 'n_source_avg_gen_tps') }}
            as localscore_avg_gen_tps,
        {{ median_of_sorted('source_avg_prompt_tps', 'source_avg_prompt_tps_position', 'n_source_avg_prompt_tps') }}
            as localscore_avg_prompt_tps,
        {{ median_of_sorted('source_avg_ttft_ms', 'source_avg_ttft_ms_position', 'n_source_avg_ttft_ms') }}
            as localscore_avg_ttft_ms,
        {{ median_of_sorted('source_performance_score', 'source_performance_score_position',
            'n_source_performance_score') }} as localscore_performance_score,
        count(*) as n_localscore_runs,
        {{ first_by('source_run_id', ['measured_at desc', 'source_run_id desc']) }} as latest_localscore_run_id
    from localscore_runs
    group by build_id, hardware_id, engine
),

ranked as (
    select
        *,
        row_number() over (
            partition by build_id, hardware_id, engine
            order by gen_tps nulls last
        ) as gen_tps_position,
        count(gen_tps) over (partition by build_id, hardware_id, engine) as n_gen_tps,
        row_number() over (
            partition by build_id, hardware_id, engine
            order by prompt_tps nulls last
        ) as prompt_tps_position,
        count(prompt_tps) over (partition by build_id, hardware_id, engine) as n_prompt_tps
    from measurements
),

speeds as (
    select
        build_id,
        hardware_id,
        engine,
        any_value(model_id) as model_id,
        any_value(quant) as quant,
        {{ median_of_sorted('gen_tps', 'gen_tps_position', 'n_gen_tps') }} as gen_tps_median,
        {{ median_of_sorted('prompt_tps', 'prompt_tps_position', 'n_prompt_tps') }} as prompt_tps_median,
        count(*) as n_samples,
        max(measured_at) as last_measured_at
    from ranked
    group by build_id, hardware_id, engine
),

runs as (
    select
        build_id,
        hardware_id,
        engine,
        count(*) as n_runs,
        {{ string_agg_distinct("source", ", ") }} as sources,
        {{ string_agg_distinct("source || ':' || source_run_id", ", ") }} as run_ids
    from (select distinct build_id, hardware_id, engine, source, source_run_id from measurements) as distinct_runs
    group by build_id, hardware_id, engine
),

tests as (
    select
        build_id,
        hardware_id,
        engine,
        count(test_name) as n_tests,
        {{ string_agg_distinct("test_name", ", ") }} as test_names
    from (select distinct build_id, hardware_id, engine, test_name from measurements) as distinct_tests
    group by build_id, hardware_id, engine
),

rows as (
    select
        speeds.build_id,
        speeds.hardware_id,
        speeds.engine,
        speeds.model_id,
        model.name as model_name,
        speeds.quant,
        hardware.name as hardware_name,
        speeds.gen_tps_median,
        speeds.prompt_tps_median,
        runs.n_runs,
        speeds.n_samples,
        tests.n_tests,
        runs.sources,
        tests.test_names,
        runs.run_ids,
        speeds.last_measured_at
    from speeds
    inner join runs
        on runs.build_id = speeds.build_id and runs.hardware_id = speeds.hardware_id and runs.engine = speeds.engine
    inner join tests
        on tests.build_id = speeds.build_id and tests.hardware_id = speeds.hardware_id and tests.engine = speeds.engine
    left join {{ ref('dim_hardware') }} as hardware on hardware.hardware_id = speeds.hardware_id
    left join {{ ref('dim_model') }} as model on model.model_id = speeds.model_id
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

-- A model on popular hardware (var site_popular_hardware): the best quantization that fits the
-- machine's memory at the default context (the largest file that fits), and its generation
-- speed: measured where someone ran it (signed or source), else the bandwidth estimate of the
-- engine with the broadest fit, marked is_estimate with the fit's n and error.
with popular as (
    select hardware_id, name as hardware_name, memory_bytes
    from {{ ref('dim_hardware') }}
    where hardware_id in (
            {%- for hardware_id in var("site_popular_hardware") %}
                '{{ hardware_id }}'{{ "," if not loop.last }}
            {%- endfor %}
        )
),

memory as (
    select build_id, model_id, quant, weights_bytes, estimated_bytes
    from {{ ref('fct_memory_requirements') }}
    -- builds with a file: an estimate from parameters stays on the memory and fits-on sections
    where is_default_context and weights_basis = 'file'
),

fitting as (
    {% call keep_first('hardware_id, model_id', 'weights_bytes desc, build_id asc') -%}
        select popular.hardware_id, memory.*
        from popular
        inner join memory on memory.estimated_bytes <= popular.memory_bytes
    {%- endcall %}
),

pairs as (
    -- every popular machine x every model with a memory estimate: fits or not
    select popular.hardware_id, popular.hardware_name, models.model_id
    from popular
    cross join (select distinct model_id from memory) as models
),

measured_pairs as (
    select
        hardware_id,
        build_id,
        coalesce(engine, 'unknown') as engine,
        median(gen_tps) as gen_tps_median,
        count(distinct source || '|' || source_run_id) as n_runs
    from {{ ref('fct_speed_measurements') }}
    where is_countable and not is_duplicate and is_preferred_config and gen_tps > 0
    group by hardware_id, build_id, coalesce(engine, 'unknown')
),

-- the fastest engine measured on the pair
measured as (
    {% call keep_first('hardware_id, build_id', 'gen_tps_median desc, engine asc') -%}
        select * from measured_pairs
    {%- endcall %}
),

expected as (
    {% call keep_first('hardware_id, build_id', 'fit_n desc, fit_mdape_pct asc nulls last, engine asc') -%}
        select * from {{ ref('fct_expected_speed') }}
    {%- endcall %}
)

select
    pairs.model_id,
    pairs.hardware_id,
    pairs.hardware_name,
    model.name as model_name,
    fitting.build_id is not null as has_fitting_build,
    fitting.build_id,
    fitting.quant,
    fitting.estimated_bytes,
    coalesce(measured.engine, expected.engine) as engine,
    coalesce(measured.gen_tps_median, expected.expected_gen_tps) as gen_tps,
    case
        when measured.gen_tps_median is not null then false
        when expected.expected_gen_tps is not null then true
    end as is_estimate,
    measured.n_runs as n_runs_measured,
    expected.fit_n,
    expected.fit_mdape_pct
from pairs
left join {{ ref('dim_model') }} as model on model.model_id = pairs.model_id
left join fitting
    on fitting.hardware_id = pairs.hardware_id and fitting.model_id = pairs.model_id
left join measured
    on measured.hardware_id = pairs.hardware_id and measured.build_id = fitting.build_id
left join expected
    on expected.hardware_id = pairs.hardware_id and expected.build_id = fitting.build_id

-- A model's measured speeds: per build, machine and engine, the median generation and prompt
-- speeds over every signed or source measurement, how many runs, and which sources.
with measurements as (
    select * from {{ ref('fct_speed_measurements') }}
    where trust in ('signed', 'source') and not is_duplicate and build_id is not null
)

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
    string_agg(distinct measurements.source, ', ' order by measurements.source) as sources,
    max(measurements.measured_at) as last_measured_at
from measurements
left join {{ ref('dim_hardware') }} as hardware on hardware.hardware_id = measurements.hardware_id
left join {{ ref('dim_model') }} as model on model.model_id = measurements.model_id
group by measurements.build_id, measurements.hardware_id, coalesce(measurements.engine, 'unknown')

-- Measured (hardware, build, engine) pairs with what the cost formula needs: the median
-- generation speed, the median measured power (else TDP), the hardware price, and the date of
-- the latest measurement (the date the API price is looked up at; received_at for the pairs whose
-- files gave no time). Site-grade rows only.
with measurements as (
    select * from {{ ref('fct_speed_measurements') }}
    where gen_tps > 0 and is_countable and not is_duplicate and is_preferred_config
)

select
    m.hardware_id,
    m.build_id,
    coalesce(m.engine, 'unknown') as engine,
    any_value(b.model_id) as model_id,
    count(*) as n_measurements,
    count(distinct m.source || '|' || m.source_run_id) as n_runs,
    median(m.gen_tps) as gen_tps_median,
    median(m.power_w) filter (where m.power_w > 0) as measured_power_w,
    any_value(h.tdp_w) as tdp_w,
    any_value(h.launch_price_usd) as hardware_price_usd,
    max(m.measured_at) as measured_at,
    max(m.received_at) as received_at
from measurements as m
inner join {{ ref('dim_model_build') }} as b on b.build_id = m.build_id
inner join {{ ref('dim_hardware') }} as h on h.hardware_id = m.hardware_id
group by m.hardware_id, m.build_id, coalesce(m.engine, 'unknown')

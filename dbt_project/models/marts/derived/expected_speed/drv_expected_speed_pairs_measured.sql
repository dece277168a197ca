-- Measured (hardware, build, engine) pairs against the bandwidth bound: generating one token
-- reads every weight once, so theoretical tok/s = memory bandwidth / weights bytes, and
-- efficiency = measured median gen tok/s / theoretical tok/s. Site-grade rows only.
with measurements as (
    select * from {{ ref('fct_speed_measurements') }}
    where gen_tps > 0 and is_countable and not is_duplicate and is_preferred_config
),

weights as (
    select build_id, weights_bytes from {{ ref('drv_memory_builds_shaped') }}
    where weights_basis = 'file'
)

select
    m.hardware_id,
    m.build_id,
    coalesce(m.engine, 'unknown') as engine,
    count(*) as n_measurements,
    median(m.gen_tps) as gen_tps_median,
    any_value(h.memory_bandwidth_gbps) as memory_bandwidth_gbps,
    any_value(w.weights_bytes) as weights_bytes,
    any_value(h.memory_bandwidth_gbps) * 1e9 / any_value(w.weights_bytes) as theoretical_tps,
    median(m.gen_tps) / (any_value(h.memory_bandwidth_gbps) * 1e9 / any_value(w.weights_bytes)) as efficiency
from measurements as m
inner join {{ ref('dim_hardware') }} as h on h.hardware_id = m.hardware_id
inner join weights as w on w.build_id = m.build_id
where h.memory_bandwidth_gbps > 0 and w.weights_bytes > 0
group by m.hardware_id, m.build_id, coalesce(m.engine, 'unknown')

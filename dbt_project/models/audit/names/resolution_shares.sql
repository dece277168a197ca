-- How much of each speed source resolves to catalogue entries: the headline of the resolution
-- report (`benchwh status`, publish metadata); audit.unresolved_names lists what is left.
with runs as (
    select
        m.source,
        m.source_run_id,
        bool_and(h.is_catalogued) as hardware_resolved,
        bool_and(d.is_resolved) as model_resolved
    from {{ ref('fct_speed_measurements') }} as m
    inner join {{ ref('dim_hardware') }} as h using (hardware_id)
    inner join {{ ref('dim_model') }} as d using (model_id)
    group by m.source, m.source_run_id
)

select
    cast(source as string) as source,
    cast(count(*) as bigint) as n_runs,
    cast(avg(case when hardware_resolved then 1.0 else 0.0 end) as double) as hardware_resolved_share,
    cast(avg(case when model_resolved then 1.0 else 0.0 end) as double) as model_resolved_share
from runs
group by source

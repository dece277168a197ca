-- Energy per generated token of each run (DESIGN §7), one row per run:
--   energy reported:  sum(energy_j) / sum(n_gen) over the samples that report energy
--   power reported:   median(power_w / gen_tps) over the samples that report power
--   else modelled:    the hardware's TDP / the run's median gen_tps
-- Duplicates (is_duplicate) are left out; every trust level is kept (the mart says which).
with measurements as (
    select * from {{ ref('fct_speed_measurements') }}
    where gen_tps > 0 and not is_duplicate
),

runs as (
    select
        source,
        source_run_id,
        {{ any_value_ordered("hardware_id", "hardware_id") }} as hardware_id,
        {{ any_value_ordered("machine_id", "machine_id") }} as machine_id,
        {{ any_value_ordered("build_id", "build_id") }} as build_id,
        {{ any_value_ordered("model_id", "model_id") }} as model_id,
        coalesce({{ any_value_ordered("engine", "engine") }}, 'unknown') as engine,
        {{ any_value_ordered("trust", "trust") }} as trust,
        {{ any_value_ordered("is_countable", "trust") }} as is_countable,
        upper(max(country)) as country,
        max(power_method) as power_method,
        min(measured_at) as measured_at,
        min(received_at) as received_at,
        median(gen_tps) as gen_tps_median,
        -- ordered, so the float sum is the same on every rebuild
        {{ ordered_sum('energy_j', 'sample_index') }} filter (where energy_j > 0 and n_gen > 0) as energy_j,
        sum(n_gen) filter (where energy_j > 0 and n_gen > 0) as energy_gen_tokens,
        median(power_w / gen_tps) filter (where power_w > 0) as power_j_per_token,
        median(power_w) filter (where power_w > 0) as power_w_median
    from measurements
    group by source, source_run_id
)

select
    runs.source,
    runs.source_run_id,
    runs.hardware_id,
    runs.machine_id,
    runs.build_id,
    runs.model_id,
    runs.engine,
    runs.trust,
    runs.is_countable,
    runs.measured_at,
    runs.received_at,
    runs.country,
    runs.gen_tps_median,
    runs.power_w_median,
    hw.tdp_w,
    case
        when runs.energy_j > 0 then runs.energy_j / runs.energy_gen_tokens
        when runs.power_j_per_token > 0 then runs.power_j_per_token
        when hw.tdp_w > 0 then hw.tdp_w / runs.gen_tps_median
    end as j_per_token,
    case
        when runs.energy_j > 0 then 'energy'
        when runs.power_j_per_token > 0 then 'power'
        when hw.tdp_w > 0 then 'tdp'
    end as energy_basis,
    case
        -- a reported energy or power is a sensor reading unless the run says it was modelled
        when runs.energy_j > 0 or runs.power_j_per_token > 0
            then case when runs.power_method = 'modelled' then 'modelled' else 'sensor' end
        when hw.tdp_w > 0 then 'modelled'
    end as method
from runs
left join {{ ref('dim_hardware') }} as hw
    on hw.hardware_id = runs.hardware_id

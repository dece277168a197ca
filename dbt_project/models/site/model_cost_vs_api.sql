-- A model's cost against the API: local USD per million generated tokens on each measured
-- machine and engine, the OpenRouter price valid at the measurement date, and their ratio.
select
    cost.model_id,
    model.name as model_name,
    cost.build_id,
    build.quant,
    cost.hardware_id,
    hardware.name as hardware_name,
    cost.engine,
    cost.gen_tps_median,
    cost.power_w,
    cost.power_basis,
    cost.local_usd_per_mtok,
    cost.openrouter_id,
    cost.api_usd_per_mtok,
    cost.local_to_api_ratio,
    cost.is_api_price_valid_at_measurement,
    cost.measured_on
from {{ ref('fct_cost_per_mtok') }} as cost
left join {{ ref('dim_model') }} as model on model.model_id = cost.model_id
left join {{ ref('dim_model_build') }} as build on build.build_id = cost.build_id
left join {{ ref('dim_hardware') }} as hardware on hardware.hardware_id = cost.hardware_id
where cost.local_usd_per_mtok is not null

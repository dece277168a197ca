-- A model's cost against the API: local USD per million generated tokens on each measured
-- machine and engine, the OpenRouter price valid at the measurement date, and their ratio.
-- is_frontier marks the rows no other row of the model beats on both price (lower or equal) and
-- speed (higher or equal, one of them strictly): the line of the "Speed against price" chart.
with costs as (
    select
        cost.model_id,
        model.name as model_name,
        cost.build_id,
        build.quant,
        build.quantizer,
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
),

dominated as (
    select distinct costs.hardware_id, costs.build_id, costs.engine
    from costs
    inner join costs as better
        on better.model_id = costs.model_id
        and better.local_usd_per_mtok <= costs.local_usd_per_mtok
        and better.gen_tps_median >= costs.gen_tps_median
        and (better.local_usd_per_mtok < costs.local_usd_per_mtok or better.gen_tps_median > costs.gen_tps_median)
)

select
    costs.*,
    coalesce(costs.gen_tps_median > 0 and dominated.build_id is null, false) as is_frontier,
    coalesce(costs.hardware_name, costs.hardware_id) || ' · ' || costs.quant as point_label
from costs
left join dominated
    on dominated.hardware_id = costs.hardware_id
    and dominated.build_id = costs.build_id
    and dominated.engine = costs.engine

-- USD per million generated tokens, locally and through the API (DESIGN §7):
--   hourly cost   = price / (lifetime_years x 365 x busy_hours_per_day) + power_kW x USD/kWh
--   local USD/Mtok = hourly cost / (gen_tps x 3600) x 1e6
--   API USD/Mtok  = OpenRouter completion price of the same model valid at the measurement date
{% set hours = var('cost_hardware_lifetime_years') * 365 * var('cost_busy_hours_per_day') %}

with pairs as (
    select * from {{ ref('drv_cost_pairs_measured') }}
),

costed as (
    select
        pairs.*,
        coalesce(measured_power_w, tdp_w) as power_w,
        case when measured_power_w is not null then 'measured' when tdp_w is not null then 'tdp' end
            as power_basis,
        hardware_price_usd / {{ hours }} as hardware_usd_per_hour,
        coalesce(measured_power_w, tdp_w) / 1000.0 * {{ var('cost_electricity_usd_per_kwh') }}
            as electricity_usd_per_hour
    from pairs
),

api as (
    select * from {{ ref('drv_api_prices_matched') }}
)

select
    costed.hardware_id,
    costed.build_id,
    costed.engine,
    costed.model_id,
    costed.n_runs,
    costed.gen_tps_median,
    costed.power_w,
    costed.power_basis,
    costed.hardware_price_usd,
    costed.hardware_usd_per_hour,
    costed.electricity_usd_per_hour,
    costed.hardware_usd_per_hour + costed.electricity_usd_per_hour as usd_per_hour,
    (costed.hardware_usd_per_hour + costed.electricity_usd_per_hour)
    / (costed.gen_tps_median * 3600) * 1e6 as local_usd_per_mtok,
    api.openrouter_id,
    api.completion_usd_per_mtok as api_usd_per_mtok,
    api.valid_from as api_price_valid_from,
    api.is_valid_at_measurement as is_api_price_valid_at_measurement,
    (costed.hardware_usd_per_hour + costed.electricity_usd_per_hour)
    / (costed.gen_tps_median * 3600) * 1e6 / nullif(api.completion_usd_per_mtok, 0)
        as local_to_api_ratio,
    cast(costed.measured_at as date) as measured_on
from costed
left join api
    on api.hardware_id = costed.hardware_id
    and api.build_id = costed.build_id
    and api.engine = costed.engine

-- The OpenRouter completion price for each measured pair's model, valid at its measurement
-- time: valid_from <= measured_at < valid_to (open-ended when valid_to is null). Free variants
-- and zero prices are skipped; among several paid ids the cheapest counts. When no range covers
-- the measurement (measured before the first snapshot), the earliest later price is used and
-- flagged is_valid_at_measurement = false. A pair whose files gave no time is priced at when
-- they were received (priced_at): measured_at itself stays null.
with pairs as (
    select hardware_id, build_id, engine, model_id, coalesce(measured_at, received_at) as priced_at
    from {{ ref('drv_cost_pairs_measured') }}
),

models as (
    select model_id, openrouter_id from {{ ref('dim_model') }}
),

prices as (
    select openrouter_id, model_id, valid_from, valid_to, completion_usd_per_mtok
    from {{ ref('fct_api_prices') }}
    where completion_usd_per_mtok > 0 and openrouter_id not like '%:free'
),

candidates as (
    select
        pairs.hardware_id,
        pairs.build_id,
        pairs.engine,
        prices.openrouter_id,
        prices.valid_from,
        prices.completion_usd_per_mtok,
        prices.valid_from <= pairs.priced_at
        and (prices.valid_to is null or pairs.priced_at < prices.valid_to) as is_valid_at_measurement,
        prices.valid_from > pairs.priced_at as is_later
    from pairs
    left join models on models.model_id = pairs.model_id
    inner join prices
        -- the catalogue's OpenRouter id when it has one, else the provisional model id
        on prices.openrouter_id = models.openrouter_id
        or (models.openrouter_id is null and prices.model_id = pairs.model_id)
)

-- per pair a range valid at the measurement first (the cheapest paid id), else the earliest later one
{% call keep_first('hardware_id, build_id, engine',
    'is_valid_at_measurement desc, case when is_valid_at_measurement then completion_usd_per_mtok end, '
    ~ 'valid_from asc, completion_usd_per_mtok asc, openrouter_id asc') -%}
select
    hardware_id,
    build_id,
    engine,
    openrouter_id,
    valid_from,
    completion_usd_per_mtok,
    is_valid_at_measurement
from candidates
where is_valid_at_measurement or is_later
{%- endcall %}

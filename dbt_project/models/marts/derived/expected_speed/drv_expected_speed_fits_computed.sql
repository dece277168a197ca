-- Efficiency per engine: the median of measured over theoretical tok/s of its measured pairs.
-- The fit's error is measured on held-out pairs: each pair is predicted by the median of the
-- engine's other pairs (leave-one-out), and the median absolute percentage error is reported.
-- The leave-one-out median is read from the engine's sorted efficiencies (O(n log n), no self
-- join): without the value at position p, the k-th remaining value is sorted[k] for k < p and
-- sorted[k + 1] otherwise.
{#- n // 2 and (n - 1) // 2: the middle positions -#}
{%- set half_n = int_div('ranked.n', 2) -%}
{%- set half_m = int_div('ranked.n - 1', 2) %}
with pairs as (
    select * from {{ ref('drv_expected_speed_pairs_measured') }}
),

ranked as (
    select
        *,
        row_number() over (partition by engine order by efficiency, hardware_id, build_id) as position,
        count(*) over (partition by engine) as n
    from pairs
),

sorted as (
    -- the values alone sorted: ties are equal values, so the id tie-breakers do not change the list
    select engine, {{ sorted_list('efficiency') }} as efficiencies
    from pairs
    group by engine
),

held_out as (
    select
        ranked.engine,
        ranked.gen_tps_median,
        ranked.theoretical_tps,
        -- m = n - 1 values remain; the median is the middle one, or the mean of the middle two
        case
            when (ranked.n - 1) % 2 = 1
                then
                    case when {{ half_n }} < ranked.position
                            then {{ list_at('sorted.efficiencies', half_n) }}
                        else {{ list_at('sorted.efficiencies', half_n ~ ' + 1') }}
                    end
            else (
                case when {{ half_m }} < ranked.position
                        then {{ list_at('sorted.efficiencies', half_m) }}
                    else {{ list_at('sorted.efficiencies', half_m ~ ' + 1') }}
                end
                + case when {{ half_m }} + 1 < ranked.position
                        then {{ list_at('sorted.efficiencies', half_m ~ ' + 1') }}
                    else {{ list_at('sorted.efficiencies', half_m ~ ' + 2') }}
                end
            ) / 2
        end as held_out_efficiency
    from ranked
    inner join sorted on sorted.engine = ranked.engine
    where ranked.n >= 2
),

errors as (
    select
        engine,
        median(abs(theoretical_tps * held_out_efficiency - gen_tps_median) / gen_tps_median) * 100 as mdape_pct
    from held_out
    group by engine
)

select
    pairs.engine,
    count(*) as fit_n,
    median(pairs.efficiency) as efficiency,
    any_value(errors.mdape_pct) as fit_mdape_pct
from pairs
left join errors on errors.engine = pairs.engine
group by pairs.engine

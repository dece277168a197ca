-- Efficiency per engine: the median of measured over theoretical tok/s of its measured pairs.
-- The fit's error is measured on held-out pairs: each pair is predicted by the median of the
-- engine's other pairs (leave-one-out), and the median absolute percentage error is reported.
with pairs as (
    select * from {{ ref('int_expected_speed_pairs_measured') }}
),

held_out as (
    select
        target.engine,
        target.hardware_id,
        target.build_id,
        target.gen_tps_median,
        target.theoretical_tps * median(others.efficiency) as predicted_tps
    from pairs as target
    inner join pairs as others
        on others.engine = target.engine
        and not (others.hardware_id = target.hardware_id and others.build_id = target.build_id)
    group by target.engine, target.hardware_id, target.build_id, target.gen_tps_median, target.theoretical_tps
),

errors as (
    select engine, median(abs(predicted_tps - gen_tps_median) / gen_tps_median) * 100 as mdape_pct
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

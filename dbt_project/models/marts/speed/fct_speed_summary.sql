-- One row per (hardware, model build, engine, configuration, test profile): medians, the order-statistic 95%
-- interval of the generation-speed median and the rank range within the leaderboard of one
-- machine (hardware_id x test_profile), DESIGN §7.
-- Only trust 'signed' and 'source' rows count (unverified tool outputs stay in
-- fct_speed_measurements with their trust level); duplicates (is_duplicate) count once, i.e.
-- the flagged re-submission is left out.
with measurements as (
    select
        hardware_id,
        model_id,
        quant,
        coalesce(engine, 'unknown') as engine,
        -- runs made differently never pool (null: the source's own fixed harness, e.g. LocalScore)
        config_id,
        test_name as test_profile,
        build_id,
        source,
        source_run_id,
        gen_tps,
        prompt_tps,
        ttft_ms,
        turn_time_ms,
        is_turn_time_derived
    from {{ ref('fct_speed_measurements') }}
    where is_countable
        and not is_duplicate
),

-- per group: the sorted generation speeds (a list), so the order statistics are list lookups
groups as (
    select
        hardware_id, model_id, quant, build_id, engine, config_id, test_profile,
        bool_or(is_turn_time_derived) as is_turn_time_derived,
        count(distinct source || '|' || source_run_id) as n_runs,
        count(*) as n_samples,
        count(gen_tps) as n_gen_samples,
        {{ sorted_list('gen_tps') }} as sorted_gen_tps,
        median(gen_tps) as gen_tps_median,
        median(prompt_tps) as prompt_tps_median,
        median(ttft_ms) as ttft_ms_median,
        median(turn_time_ms) as turn_time_ms_median
    from measurements
    group by all
),

order_statistic_k as (
    {{ order_statistic_ci_k('groups', 'n_gen_samples') }}
),

summary as (
    select
        {{ star_except(['sorted_gen_tps'], 'g.') }},
        case when g.n_gen_samples = 0 then null
            when k.k is null then {{ list_at('g.sorted_gen_tps', '1') }}
            else {{ list_at('g.sorted_gen_tps', 'k.k') }}
        end as gen_tps_ci_low,
        case when g.n_gen_samples = 0 then null
            when k.k is null then {{ list_at('g.sorted_gen_tps', 'g.n_gen_samples') }}
            else {{ list_at('g.sorted_gen_tps', 'g.n_gen_samples - k.k + 1') }}
        end as gen_tps_ci_high,
        case when g.n_gen_samples = 0 then null
            when k.k is null then 'min_max'
            else 'order_statistic'
        end as interval_method
    from groups as g
    left join order_statistic_k as k on g.n_gen_samples = k.n
),

-- rank_best = 1 + #{j : lo_j > hi_i}; rank_worst = 1 + #{j != i : hi_j >= lo_i}
ranks as (
    select
        i.hardware_id, i.build_id, i.engine, i.config_id, i.test_profile,
        1 + count(case when j.gen_tps_ci_low > i.gen_tps_ci_high then 1 end) as rank_best,
        1 + count(case when not (
                    j.build_id = i.build_id
                    and j.engine = i.engine
                    and j.config_id = i.config_id
                )
                and j.gen_tps_ci_high >= i.gen_tps_ci_low then 1
        end) as rank_worst,
        count(*) as rank_of
    from summary as i
    inner join summary as j
        on i.hardware_id = j.hardware_id
        and i.test_profile = j.test_profile
        and j.gen_tps_ci_low is not null
    where i.gen_tps_ci_low is not null
    group by all
)

select
    s.hardware_id,
    s.model_id,
    s.quant,
    s.engine,
    s.config_id,
    s.test_profile,
    s.build_id,
    s.n_runs,
    s.n_samples,
    s.n_gen_samples,
    s.gen_tps_median,
    s.gen_tps_ci_low,
    s.gen_tps_ci_high,
    s.interval_method,
    s.prompt_tps_median,
    s.ttft_ms_median,
    s.turn_time_ms_median,
    s.is_turn_time_derived,
    r.rank_best,
    r.rank_worst,
    r.rank_of
from summary as s
left join ranks as r
    on r.hardware_id = s.hardware_id
    and r.build_id = s.build_id
    and r.engine = s.engine
    and r.config_id = s.config_id
    and r.test_profile = s.test_profile

-- One row per (hardware, model build, engine, configuration, test profile): medians, the order-statistic 95%
-- interval of the generation-speed median and the rank range within the leaderboard of one
-- machine (hardware_id x test_profile), DESIGN §7.
-- Only trust 'signed' and 'source' rows count (unverified tool outputs stay in
-- fct_speed_measurements with their trust level); duplicates (is_duplicate) count once, i.e.
-- the flagged re-submission is left out.
-- read twice (the samples and the group sizes), so computed where read: see not_materialized()
with measurements as {{ not_materialized() }} (
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

-- Each sample's place in its group's sort, one window per figure: the medians and the interval's
-- order statistics are then plain aggregates (median_of_sorted), where median() and a sorted list
-- per group are holistic and held every group in memory (out of 1 GB at scale 10).
ranked as (
    select
        *,
        row_number() over (
            partition by hardware_id, model_id, quant, build_id, engine, config_id, test_profile
            order by gen_tps nulls last
        ) as gen_tps_position,
        count(gen_tps) over (
            partition by hardware_id, model_id, quant, build_id, engine, config_id, test_profile
        ) as n_gen_tps,
        row_number() over (
            partition by hardware_id, model_id, quant, build_id, engine, config_id, test_profile
            order by prompt_tps nulls last
        ) as prompt_tps_position,
        count(prompt_tps) over (
            partition by hardware_id, model_id, quant, build_id, engine, config_id, test_profile
        ) as n_prompt_tps,
        row_number() over (
            partition by hardware_id, model_id, quant, build_id, engine, config_id, test_profile
            order by ttft_ms nulls last
        ) as ttft_ms_position,
        count(ttft_ms) over (
            partition by hardware_id, model_id, quant, build_id, engine, config_id, test_profile
        ) as n_ttft_ms,
        row_number() over (
            partition by hardware_id, model_id, quant, build_id, engine, config_id, test_profile
            order by turn_time_ms nulls last
        ) as turn_time_ms_position,
        count(turn_time_ms) over (
            partition by hardware_id, model_id, quant, build_id, engine, config_id, test_profile
        ) as n_turn_time_ms
    from measurements
),

group_sizes as (
    select count(gen_tps) as n_gen_tps
    from measurements
    group by hardware_id, model_id, quant, build_id, engine, config_id, test_profile
),

order_statistic_k as (
    {{ order_statistic_ci_k('group_sizes', 'n_gen_tps') }}
),

-- the interval is [x(k), x(n-k+1)], or [min, max] where no k exists (n <= 5)
summary as (
    select
        r.hardware_id, r.model_id, r.quant, r.build_id, r.engine, r.config_id, r.test_profile,
        bool_or(r.is_turn_time_derived) as is_turn_time_derived,
        count(distinct r.source || '|' || r.source_run_id) as n_runs,
        count(*) as n_samples,
        max(r.n_gen_tps) as n_gen_samples,
        {{ median_of_sorted('r.gen_tps', 'r.gen_tps_position', 'r.n_gen_tps') }} as gen_tps_median,
        max(r.gen_tps) filter (where r.gen_tps_position = coalesce(k.k, 1)) as gen_tps_ci_low,
        max(r.gen_tps) filter (where r.gen_tps_position = r.n_gen_tps - coalesce(k.k, 1) + 1) as gen_tps_ci_high,
        case when max(r.n_gen_tps) = 0 then null
            when max(k.k) is null then 'min_max'
            else 'order_statistic'
        end as interval_method,
        {{ median_of_sorted('r.prompt_tps', 'r.prompt_tps_position', 'r.n_prompt_tps') }} as prompt_tps_median,
        {{ median_of_sorted('r.ttft_ms', 'r.ttft_ms_position', 'r.n_ttft_ms') }} as ttft_ms_median,
        {{ median_of_sorted('r.turn_time_ms', 'r.turn_time_ms_position', 'r.n_turn_time_ms') }} as turn_time_ms_median
    from ranked as r
    left join order_statistic_k as k on r.n_gen_tps = k.n
    group by r.hardware_id, r.model_id, r.quant, r.build_id, r.engine, r.config_id, r.test_profile
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

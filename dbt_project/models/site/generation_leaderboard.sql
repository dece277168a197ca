-- The leaderboard of one machine per protocol (test profile): each model build's median
-- generation speed, its 95% interval and its rank range "best-worst of N" (DESIGN §7, computed in
-- marts.fct_speed_summary from signed and source rows), with prompt size and turn time (flagged
-- when derived from TTFT and speed), the family as a page prints it and the protocol followed
-- (sampling, repetitions; reference page leaderboard-generation-1k.txt). A build measured with
-- several configurations has a row per configuration, labelled; degraded ones (CPU fallback,
-- partial offload) are flagged.
with summary as (
    select * from {{ ref('fct_speed_summary') }}
    where rank_of is not null
),

countable as (
    select
        hardware_id,
        build_id,
        coalesce(engine, 'unknown') as engine,
        config_id,
        test_name as test_profile,
        n_prompt,
        n_gen,
        protocol_sampling,
        protocol_repetitions
    from {{ ref('fct_speed_measurements') }}
    where is_countable and not is_duplicate
),

tokens as (
    select
        hardware_id,
        build_id,
        engine,
        config_id,
        test_profile,
        median(n_prompt) as prompt_tokens,
        median(n_gen) as gen_tokens
    from countable
    group by all
),

-- The protocol most samples followed. Ties go to the smallest value (mode() picks any of them),
-- so that every build of the same data publishes the same row.
sampling_ranked as (
    select
        hardware_id,
        build_id,
        engine,
        config_id,
        test_profile,
        protocol_sampling,
        row_number() over (
            partition by hardware_id, build_id, engine, config_id, test_profile
            order by count(*) desc, protocol_sampling
        ) as position
    from countable
    where protocol_sampling is not null
    group by hardware_id, build_id, engine, config_id, test_profile, protocol_sampling
),

repetitions_ranked as (
    select
        hardware_id,
        build_id,
        engine,
        config_id,
        test_profile,
        protocol_repetitions,
        row_number() over (
            partition by hardware_id, build_id, engine, config_id, test_profile
            order by count(*) desc, protocol_repetitions
        ) as position
    from countable
    where protocol_repetitions is not null
    group by hardware_id, build_id, engine, config_id, test_profile, protocol_repetitions
),

leaderboard as (
    select
        summary.hardware_id,
        hardware.name as hardware_name,
        summary.test_profile,
        summary.model_id,
        model.name as model_name,
        model.family,
        model.family_display,
        summary.quant,
        summary.engine,
        summary.config_id,
        -- which configuration the row is, as a page prints it
        case
            when summary.config_id = 'source-default' then 'fixed harness of the source'
            when summary.config_id = 'unreported' then 'settings not reported'
            else concat_ws(
                    ' · ',
                    nullif(concat_ws(' ', config.engine, config.engine_version), ''),
                    config.backend,
                    case config.offload
                        when 'full' then 'full offload' when 'partial' then 'partial offload' when 'none' then 'CPU'
                    end,
                    case config.flash_attn when 'on' then 'flash attention' end,
                    case when config.n_ubatch is not null then 'ubatch ' || cast(config.n_ubatch as string) end,
                    case when config.type_k is not null and config.type_k != 'f16' then 'KV ' || config.type_k end,
                    case
                        when config.concurrency is not null then cast(config.concurrency as string) || ' concurrent'
                    end
                )
        end as config_label,
        coalesce(config.is_cpu_fallback or config.is_partial_offload, false) as is_degraded_config,
        summary.build_id,
        summary.gen_tps_median,
        summary.gen_tps_ci_low,
        summary.gen_tps_ci_high,
        summary.interval_method,
        cast(summary.rank_best as integer) as rank_best,
        cast(summary.rank_worst as integer) as rank_worst,
        cast(summary.rank_of as integer) as rank_of,
        case
            when summary.rank_best = summary.rank_worst then cast(summary.rank_best as string)
            else summary.rank_best || '-' || summary.rank_worst
        end || ' of ' || summary.rank_of as rank_label,
        cast(tokens.prompt_tokens as bigint) as prompt_tokens,
        cast(tokens.gen_tokens as bigint) as gen_tokens,
        summary.prompt_tps_median,
        summary.ttft_ms_median,
        summary.turn_time_ms_median,
        summary.is_turn_time_derived,
        sampling.protocol_sampling,
        cast(repetitions.protocol_repetitions as integer) as protocol_repetitions,
        cast(summary.n_runs as bigint) as n_runs,
        cast(summary.n_samples as bigint) as n_samples
    from summary
    left join {{ ref('dim_hardware') }} as hardware on hardware.hardware_id = summary.hardware_id
    left join {{ ref('dim_model') }} as model on model.model_id = summary.model_id
    left join {{ ref('dim_run_config') }} as config on config.config_id = summary.config_id
    left join tokens
        on tokens.hardware_id = summary.hardware_id
        and tokens.build_id = summary.build_id
        and tokens.engine = summary.engine
        and tokens.config_id = summary.config_id
        and tokens.test_profile = summary.test_profile
    left join sampling_ranked as sampling
        on sampling.hardware_id = summary.hardware_id
        and sampling.build_id = summary.build_id
        and sampling.engine = summary.engine
        and sampling.config_id = summary.config_id
        and sampling.test_profile = summary.test_profile
        and sampling.position = 1
    left join repetitions_ranked as repetitions
        on repetitions.hardware_id = summary.hardware_id
        and repetitions.build_id = summary.build_id
        and repetitions.engine = summary.engine
        and repetitions.config_id = summary.config_id
        and repetitions.test_profile = summary.test_profile
        and repetitions.position = 1
),

-- what a leaderboard page says about its protocol, one value per test profile: the largest token
-- counts, runs and sampling of its rows (a page prints one sentence for every machine's board)
profiles as (
    select
        test_profile,
        coalesce(max(prompt_tokens), 0) as profile_prompt_tokens,
        coalesce(max(gen_tokens), 0) as profile_gen_tokens,
        coalesce(max(n_runs), 0) as profile_max_runs,
        min(protocol_sampling) as profile_sampling,
        bool_or(is_turn_time_derived) as has_derived_turn_times
    from leaderboard
    group by test_profile
),

profile_texts as (
    select
        profiles.*,
        coalesce({{ regexp_matches('profiles.profile_sampling', '"temperature": *0(\\.0*)?[,}]') }}, false)
            as is_greedy
    from profiles
)

select
    leaderboard.*,
    builds.quantizer as packager,
    coalesce(leaderboard.model_name, leaderboard.model_id) || ' ('
    || leaderboard.quant || coalesce(' · ' || builds.quantizer, '') || ')' as entry_label,
    case
        when profile_texts.profile_gen_tokens > 0 and profile_texts.profile_prompt_tokens > 0
            then 'Generation, ' || {{ tokens_short('profile_texts.profile_prompt_tokens') }} || ' prompt · '
                || {{ thousands('profile_texts.profile_gen_tokens') }} || ' tokens'
        when profile_texts.profile_gen_tokens > 0
            then 'Generation, no prompt · ' || {{ thousands('profile_texts.profile_gen_tokens') }} || ' tokens'
        else 'Prompt processing, ' || {{ tokens_short('profile_texts.profile_prompt_tokens') }} || ' tokens'
    end as profile_display_name,
    cast(profile_texts.profile_prompt_tokens as bigint) as profile_prompt_tokens,
    cast(profile_texts.profile_gen_tokens as bigint) as profile_gen_tokens,
    'How fast the model writes its answer: tokens per second over '
    || {{ thousands('profile_texts.profile_gen_tokens') }} || ' generated tokens'
    || case
        when profile_texts.profile_prompt_tokens > 0
            then ', after a prompt of about ' || {{ thousands('profile_texts.profile_prompt_tokens') }} || ' tokens'
        else ''
    end
    || '. ' || case when profile_texts.is_greedy then 'Greedy sampling, median' else 'Median' end
    || ' of up to ' || cast(profile_texts.profile_max_runs as string)
    || case when profile_texts.profile_max_runs = 1 then ' run' else ' runs' end
    || ' per row; the interval is the'
    || ' distribution-free 95% interval of the median (the range of the samples for 5 or fewer).'
        as protocol_text,
    'Turn time is from sending the message to the last of '
    || {{ thousands('profile_texts.profile_gen_tokens') }} || ' tokens, as the client sees it'
    || case
        when profile_texts.has_derived_turn_times
            then '; marked where the source gave none and it is derived as time to first token'
                || ' + tokens ÷ speed.'
        else '.'
    end as turn_time_text
from leaderboard
left join {{ ref('dim_model_build') }} as builds on builds.build_id = leaderboard.build_id
left join profile_texts on profile_texts.test_profile = leaderboard.test_profile

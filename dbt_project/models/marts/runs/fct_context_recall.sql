-- One row per run and context size its recall walk tried, with the run's verdict repeated on
-- each row: the largest context recalled and why the walk stopped.
--   all_recalled   every size tried was recalled (the walk ended at its largest size)
--   recall_failed  the largest size tried was not recalled (the walk stopped at a failure)
--   none_recalled  no size was recalled

with recalls as (
    select * from {{ ref('stg_runs__context_recalls') }}
),

runs as (
    select * from {{ ref('int_runs_deduplicated') }}
),

kept as (
    select recalls.*
    from recalls
    inner join runs
        on recalls.source = runs.source
        and recalls.source_run_id = runs.source_run_id
        and recalls.raw_sha256 = runs.raw_sha256
),

per_run as (
    select
        source,
        source_run_id,
        max(context_tokens) filter (where is_recalled) as largest_context_recalled,
        max(context_tokens) as largest_context_tried,
        arg_max(is_recalled, context_tokens) as is_largest_tried_recalled,
        count(*) as n_sizes_tried,
        count(*) filter (where is_recalled) as n_sizes_recalled
    from kept
    group by source, source_run_id
),

final as (
    select
        kept.source,
        kept.source_run_id,
        kept.context_tokens,
        kept.step_index,
        kept.is_recalled,
        per_run.largest_context_recalled,
        per_run.largest_context_tried,
        case
            when per_run.n_sizes_recalled = 0 then 'none_recalled'
            when per_run.n_sizes_recalled = per_run.n_sizes_tried then 'all_recalled'
            when not per_run.is_largest_tried_recalled then 'recall_failed'
            else 'all_recalled_at_largest'
        end as stop_reason,
        runs.raw_hardware_name,
        runs.raw_model_name,
        runs.raw_quant,
        runs.engine,
        runs.trust,
        runs.created_at as measured_at
    from kept
    inner join per_run using (source, source_run_id)
    inner join runs using (source, source_run_id)
)

select * from final

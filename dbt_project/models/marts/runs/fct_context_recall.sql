-- One row per run and context size its recall walk tried, keyed to the run's build, machine and
-- contributor, with the run's verdict repeated on each row: the largest context recalled and
-- why the walk stopped, as the run file says (context_recall_stopped: forgot | could_not_hold |
-- reached_trained_context; `unknown` for files that do not say). A walk that stopped at a size
-- it could not hold gets that size as a row with is_recalled null (asked, never answered).

with recalls as (
    select * from {{ ref('stg_runs__context_recalls') }}
),

runs as (
    select * from {{ ref('int_runs_deduplicated') }}
),

speed_runs as (
    select source, source_run_id, build_id, model_id, hardware_id, machine_id, is_duplicate
    from {{ ref('fct_speed_runs') }}
),

kept as (
    select
        recalls.source, recalls.source_run_id, recalls.context_tokens, recalls.step_index,
        recalls.is_recalled
    from recalls
    inner join runs
        on recalls.source = runs.source
        and recalls.source_run_id = runs.source_run_id
        and recalls.raw_sha256 = runs.raw_sha256
),

not_held as (
    -- the size a walk could not hold, when it is not among the sizes it reported
    select
        runs.source, runs.source_run_id, runs.recall_stop_at_tokens as context_tokens,
        cast(coalesce(max(kept.step_index) + 1, 0) as integer) as step_index,
        cast(null as boolean) as is_recalled
    from runs
    left join kept using (source, source_run_id)
    where runs.recall_stop_reason = 'could_not_hold' and runs.recall_stop_at_tokens is not null
    group by all
    having not coalesce(bool_or(kept.context_tokens = runs.recall_stop_at_tokens), false)
),

steps as (
    select * from kept
    union all
    select * from not_held
),

per_run as (
    select
        source,
        source_run_id,
        max(context_tokens) filter (where is_recalled) as largest_context_recalled,
        max(context_tokens) as largest_context_tried
    from steps
    group by source, source_run_id
)

select
    steps.source,
    steps.source_run_id,
    steps.context_tokens,
    steps.step_index,
    steps.is_recalled,
    per_run.largest_context_recalled,
    per_run.largest_context_tried,
    coalesce(runs.recall_stop_reason, 'unknown') as stop_reason,
    runs.recall_stop_at_tokens as stop_at_tokens,
    speed_runs.build_id,
    speed_runs.model_id,
    speed_runs.hardware_id,
    speed_runs.machine_id,
    case when runs.trust = 'signed' then runs.keyid end as keyid,
    case when runs.trust = 'signed' then runs.contributor end as contributor,
    runs.raw_hardware_name,
    runs.raw_model_name,
    runs.raw_quant,
    runs.engine,
    runs.trust,
    runs.is_countable,
    coalesce(speed_runs.is_duplicate, false) as is_duplicate,
    runs.measured_at
from steps
inner join per_run using (source, source_run_id)
inner join runs using (source, source_run_id)
left join speed_runs using (source, source_run_id)

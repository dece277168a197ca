-- Reference page "How far back it remembers, machine by machine" (model-page-llama-3.2-3b.txt):
-- the grid of each build x machine, from the latest signed or source run of that build on that
-- machine. One row per context size asked (recalled true, asked and lost false, asked but the
-- machine could not hold the prompt null) and, not asked, one per standard size (seed
-- context_sizes) up to the model's trained context or the largest size asked: cell_state says
-- which of the four a cell is, so a page draws filled, outlined, dashed and blank cells from
-- the rows alone.
with recall as (
    select * from {{ ref('fct_context_recall') }}
    where is_countable and not is_duplicate
        and build_id is not null and machine_id is not null
),

latest_runs as (
    {% call keep_first('build_id, machine_id', 'measured_at desc, source_run_id desc') -%}
        select build_id, machine_id, source, source_run_id, measured_at
        from recall
    {%- endcall %}
),

asked as (
    select recall.*
    from recall
    inner join latest_runs
        on latest_runs.source = recall.source and latest_runs.source_run_id = recall.source_run_id
        and latest_runs.build_id = recall.build_id and latest_runs.machine_id = recall.machine_id
),

walks as (
    select
        asked.model_id,
        asked.build_id,
        asked.machine_id,
        any_value(asked.contributor) as contributor,
        any_value(asked.stop_reason) as stop_reason,
        any_value(asked.stop_at_tokens) as stop_at_tokens,
        any_value(asked.largest_context_recalled) as largest_context_recalled,
        any_value(asked.keyid) as keyid,
        any_value(asked.source) as source,
        any_value(asked.source_run_id) as source_run_id,
        any_value(asked.measured_at) as measured_at,
        max(asked.context_tokens) as largest_asked_tokens
    from asked
    group by asked.model_id, asked.build_id, asked.machine_id
),

not_asked as (
    select
        walks.model_id,
        walks.build_id,
        walks.machine_id,
        walks.contributor,
        sizes.context_tokens,
        cast(null as boolean) as is_recalled,
        walks.stop_reason,
        walks.stop_at_tokens,
        walks.largest_context_recalled,
        walks.keyid,
        walks.source,
        walks.source_run_id,
        walks.measured_at,
        false as is_asked
    from walks
    inner join {{ ref('dim_model') }} as model on model.model_id = walks.model_id
    cross join {{ ref('context_sizes') }} as sizes
    left join asked
        on asked.build_id = walks.build_id and asked.machine_id = walks.machine_id
        and asked.context_tokens = sizes.context_tokens
    where sizes.context_tokens <= greatest(coalesce(model.trained_context_tokens, 0), walks.largest_asked_tokens)
        and asked.build_id is null
),

-- the section's sentence: how many walks ended for each reason
walk_counts as (
    select
        model_id,
        count(*) as n_walks,
        sum(case when stop_reason = 'forgot' then 1 else 0 end) as n_walks_forgot,
        sum(case when stop_reason = 'could_not_hold' then 1 else 0 end) as n_walks_could_not_hold
    from walks
    group by model_id
),

cells as (
    select
        model_id, build_id, machine_id, contributor, context_tokens, is_recalled, stop_reason, stop_at_tokens,
        largest_context_recalled, keyid, source, source_run_id, measured_at, true as is_asked
    from asked
    union all
    select * from not_asked
)

select
    cells.model_id,
    cells.build_id,
    cells.machine_id,
    cells.contributor,
    cast(cells.context_tokens as bigint) as context_tokens,
    cells.is_recalled as recalled,
    cells.stop_reason,
    cast(cells.stop_at_tokens as bigint) as stop_at_tokens,
    cast(cells.largest_context_recalled as bigint) as largest_context_recalled,
    cells.keyid,
    machine.machine_kind,
    machine.headline_label,
    build.quant,
    build.quantizer,
    model.name as model_name,
    cells.source,
    cells.source_run_id,
    cells.measured_at,
    cells.is_asked,
    case
        when not cells.is_asked then 'not_asked'
        when cells.is_recalled then 'recalled'
        when not cells.is_recalled then 'lost'
        else 'not_held'
    end as cell_state,
    coalesce(cells.context_tokens = model.trained_context_tokens, false) as is_trained_context,
    cast(model.trained_context_tokens as bigint) as trained_context_tokens,
    cast(walk_counts.n_walks as bigint) as n_walks,
    cast(walk_counts.n_walks_forgot as bigint) as n_walks_forgot,
    cast(walk_counts.n_walks_could_not_hold as bigint) as n_walks_could_not_hold
from cells
inner join walk_counts on walk_counts.model_id = cells.model_id
left join {{ ref('dim_machine') }} as machine on machine.machine_id = cells.machine_id
left join {{ ref('dim_model_build') }} as build on build.build_id = cells.build_id
left join {{ ref('dim_model') }} as model on model.model_id = cells.model_id

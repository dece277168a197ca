-- Reference page "How far back it remembers, machine by machine" (model-page-llama-3.2-3b.txt):
-- one row per build x machine x context size asked, from the latest signed or source run of
-- that build on that machine: recalled (true), asked and lost (false), asked and not answered
-- because the machine could not hold the prompt (null), and why the walk stopped.
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
)

select
    recall.model_id,
    recall.build_id,
    recall.machine_id,
    recall.contributor,
    cast(recall.context_tokens as bigint) as context_tokens,
    recall.is_recalled as recalled,
    recall.stop_reason,
    cast(recall.stop_at_tokens as bigint) as stop_at_tokens,
    cast(recall.largest_context_recalled as bigint) as largest_context_recalled,
    recall.keyid,
    machine.machine_kind,
    machine.headline_label,
    build.quant,
    build.quantizer,
    model.name as model_name,
    recall.source,
    recall.source_run_id,
    recall.measured_at
from recall
inner join latest_runs
    on latest_runs.source = recall.source and latest_runs.source_run_id = recall.source_run_id
    and latest_runs.build_id = recall.build_id and latest_runs.machine_id = recall.machine_id
left join {{ ref('dim_machine') }} as machine on machine.machine_id = recall.machine_id
left join {{ ref('dim_model_build') }} as build on build.build_id = recall.build_id
left join {{ ref('dim_model') }} as model on model.model_id = recall.model_id

-- A model's recall by context size: of the signed or source runs whose recall walk tried a
-- context size, how many recalled the planted fact, per build.
with recall as (
    select * from {{ ref('fct_context_recall') }}
    where trust in ('signed', 'source')
),

run_builds as (
    select distinct source, source_run_id, build_id, model_id, hardware_id
    from {{ ref('fct_speed_measurements') }}
    where build_id is not null and not is_duplicate
)

select
    run_builds.build_id,
    recall.context_tokens,
    any_value(run_builds.model_id) as model_id,
    any_value(model.name) as model_name,
    any_value(build.quant) as quant,
    count(*) as n_runs,
    count(*) filter (where recall.is_recalled) as n_recalled,
    count(*) filter (where recall.is_recalled) / count(*) as recall_rate,
    count(distinct run_builds.hardware_id) as n_machines
from recall
inner join run_builds
    on run_builds.source = recall.source and run_builds.source_run_id = recall.source_run_id
left join {{ ref('dim_model') }} as model on model.model_id = run_builds.model_id
left join {{ ref('dim_model_build') }} as build on build.build_id = run_builds.build_id
group by run_builds.build_id, recall.context_tokens

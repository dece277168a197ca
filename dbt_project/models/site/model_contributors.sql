-- Reference page "Measured by" (model-page-llama-3.2-3b.txt): per model, the people whose
-- trusted keys signed its runs, how many runs and on how many machines, and which.
with runs as (
    select * from {{ ref('fct_speed_runs') }}
    where trust = 'signed' and contributor is not null and not is_duplicate
)

select
    runs.model_id,
    runs.contributor,
    cast(count(*) as bigint) as n_runs,
    cast(count(distinct runs.machine_id) as bigint) as n_machines,
    {{ string_agg_distinct("runs.keyid", ", ") }} as keyids,
    {{ string_agg_distinct("machine.machine_kind", ", ") }} as machine_kinds,
    cast(count(distinct runs.build_id) as bigint) as n_builds,
    max(runs.measured_at) as last_measured_at
from runs
left join {{ ref('dim_machine') }} as machine on machine.machine_id = runs.machine_id
group by runs.model_id, runs.contributor

-- A model's builds: each quantization with its file, packager, memory need at the default
-- context, the largest context a signed or source run proved it recalls, the best measured
-- generation speed and on how many machines it was measured.
with builds as (
    select * from {{ ref('dim_model_build') }}
),

measurements as (
    select * from {{ ref('fct_speed_measurements') }}
    where trust in ('signed', 'source') and not is_duplicate and build_id is not null
),

pair_speeds as (
    select build_id, hardware_id, coalesce(engine, 'unknown') as engine, median(gen_tps) as gen_tps_median
    from measurements
    where gen_tps > 0
    group by all
),

speeds as (
    select
        build_id,
        string_agg(distinct engine, ', ' order by engine) as engines,
        max(gen_tps_median) as best_gen_tps,
        arg_max(engine, gen_tps_median) as best_engine,
        arg_max(hardware_id, gen_tps_median) as best_hardware_id,
        count(distinct hardware_id) as n_machines
    from pair_speeds
    group by build_id
),

run_builds as (
    select distinct source, source_run_id, build_id from measurements
),

recall as (
    select run_builds.build_id, max(recall.largest_context_recalled) as context_proved_tokens
    from {{ ref('fct_context_recall') }} as recall
    inner join run_builds
        on run_builds.source = recall.source and run_builds.source_run_id = recall.source_run_id
    where recall.trust in ('signed', 'source')
    group by run_builds.build_id
),

memory as (
    select build_id, estimated_bytes, packager
    from {{ ref('fct_memory_requirements') }}
    where is_default_context
)

select
    builds.build_id,
    builds.model_id,
    model.name as model_name,
    builds.quant,
    builds.file_name,
    builds.file_size_bytes,
    coalesce(memory.packager, split_part(builds.hf_repo, '/', 1)) as packager,
    builds.hf_repo,
    memory.estimated_bytes,
    recall.context_proved_tokens,
    speeds.engines,
    speeds.best_engine,
    speeds.best_gen_tps,
    speeds.best_hardware_id,
    coalesce(speeds.n_machines, 0) as n_machines
from builds
left join {{ ref('dim_model') }} as model on model.model_id = builds.model_id
left join memory on memory.build_id = builds.build_id
left join speeds on speeds.build_id = builds.build_id
left join recall on recall.build_id = builds.build_id

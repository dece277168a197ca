-- Reference page "Every build" (model-page-llama-3.2-3b.txt): one row per build (model x quant x
-- file) with its repository, file and quantizer, the engine that ran it fastest, its memory (the
-- largest peak a trusted run measured, else the estimate at the default context), the largest
-- context a signed or source run proved it recalls, the best measured generation speed and on
-- how many machines it was measured.
with builds as (
    select * from {{ ref('dim_model_build') }}
),

measurements as (
    select * from {{ ref('fct_speed_measurements') }}
    where is_countable and not is_duplicate and build_id is not null
),

pair_speeds as (
    select
        build_id, machine_id, hardware_id, coalesce(engine, 'unknown') as engine,
        median(gen_tps) as gen_tps_median
    from measurements
    where gen_tps > 0
    group by all
),

speeds as (
    select
        build_id,
        {{ string_agg_distinct("engine", ", ") }} as engines,
        max(gen_tps_median) as best_gen_tps,
        {{ arg_max("engine", "gen_tps_median") }} as best_engine,
        {{ arg_max("hardware_id", "gen_tps_median") }} as best_hardware_id,
        count(distinct machine_id) as n_machines
    from pair_speeds
    group by build_id
),

recall as (
    select build_id, max(largest_context_recalled) as context_proved_tokens
    from {{ ref('fct_context_recall') }}
    where is_countable and not is_duplicate and build_id is not null
    group by build_id
),

peaks as (
    select build_id, max(peak_memory_bytes) as measured_peak_bytes
    from measurements
    where peak_memory_bytes > 0
    group by build_id
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
    builds.repo,
    builds.file_name,
    builds.quantizer,
    speeds.best_engine as engine,
    cast(coalesce(peaks.measured_peak_bytes, memory.estimated_bytes) as bigint) as memory_bytes,
    case when peaks.measured_peak_bytes is not null then 'measured_peak'
        when memory.estimated_bytes is not null then 'estimate'
    end as memory_basis,
    cast(recall.context_proved_tokens as bigint) as context_proved_tokens,
    speeds.best_gen_tps,
    cast(coalesce(speeds.n_machines, 0) as bigint) as n_machines,
    builds.file_size_bytes,
    builds.sha256,
    coalesce(memory.packager, builds.quantizer) as packager,
    builds.hf_repo,
    memory.estimated_bytes,
    speeds.engines,
    speeds.best_engine,
    speeds.best_hardware_id,
    -- what site.model_fits_on counts this build as needing (its tick on the fits-on bars); null for
    -- a build fits-on leaves out (marts.fct_build_fit)
    case when fit.is_counted then fit.needed_bytes end as fits_needed_bytes
from builds
left join {{ ref('dim_model') }} as model on model.model_id = builds.model_id
left join memory on memory.build_id = builds.build_id
left join speeds on speeds.build_id = builds.build_id
left join recall on recall.build_id = builds.build_id
left join peaks on peaks.build_id = builds.build_id
left join {{ ref('fct_build_fit') }} as fit on fit.build_id = builds.build_id

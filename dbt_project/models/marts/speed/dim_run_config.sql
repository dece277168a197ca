-- One row per configuration a speed measurement was made with (DESIGN §5): config_id is the hash
-- of the engine, its version and every setting the run file or tool output states (landed as
-- config_key, ingest/sources/runs/model.py). Runs with different config_ids never pool in
-- fct_speed_summary. Two ids are not hashes: 'source-default' (a source's own fixed harness that
-- reports no settings, LocalScore) and 'unreported' (a run landed before settings were kept).
with runs as (
    select * from {{ ref('int_runs_deduplicated') }}
),

configs as (
    select
        config_id,
        -- the settings are the hash's input: equal for every run of one config_id
        any_value(engine) as engine,
        any_value(engine_version) as engine_version,
        any_value(engine_backend) as backend,
        any_value(devices) as devices,
        any_value(offload) as offload,
        any_value(n_gpu_layers) as n_gpu_layers,
        any_value(flash_attn) as flash_attn,
        any_value(n_batch) as n_batch,
        any_value(n_ubatch) as n_ubatch,
        any_value(n_threads) as n_threads,
        any_value(type_k) as type_k,
        any_value(type_v) as type_v,
        any_value(split_mode) as split_mode,
        any_value(tensor_split) as tensor_split,
        any_value(n_cpu_moe) as n_cpu_moe,
        any_value(concurrency) as concurrency,
        any_value(request_rate) as request_rate,
        any_value(client_api) as client_api,
        bool_or(is_cpu_fallback) as is_cpu_fallback,
        bool_or(is_partial_offload) as is_partial_offload,
        count(*) as n_runs
    from runs
    where config_id != 'source-default'
    group by config_id
),

source_default as (
    select
        'source-default' as config_id,
        cast(null as string) as engine,
        cast(null as string) as engine_version,
        cast(null as string) as backend,
        cast(null as string) as devices,
        cast(null as string) as offload,
        cast(null as integer) as n_gpu_layers,
        cast(null as string) as flash_attn,
        cast(null as integer) as n_batch,
        cast(null as integer) as n_ubatch,
        cast(null as integer) as n_threads,
        cast(null as string) as type_k,
        cast(null as string) as type_v,
        cast(null as string) as split_mode,
        cast(null as string) as tensor_split,
        cast(null as integer) as n_cpu_moe,
        cast(null as integer) as concurrency,
        cast(null as string) as request_rate,
        cast(null as string) as client_api,
        false as is_cpu_fallback,
        false as is_partial_offload,
        cast(null as bigint) as n_runs
)

select
    cast(config_id as string) as config_id,
    engine,
    engine_version,
    backend,
    devices,
    offload,
    n_gpu_layers,
    flash_attn,
    n_batch,
    n_ubatch,
    n_threads,
    type_k,
    type_v,
    split_mode,
    tensor_split,
    n_cpu_moe,
    concurrency,
    request_rate,
    client_api,
    is_cpu_fallback,
    is_partial_offload,
    cast(n_runs as bigint) as n_runs
from configs
union all
select * from source_default

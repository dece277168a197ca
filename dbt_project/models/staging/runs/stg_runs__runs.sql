with source as (
    select * from {{ source('runs', 'runs') }}
),

renamed as (
    select
        cast(source as string) as source,
        cast(source_run_id as string) as source_run_id,
        cast(submission_id as string) as submission_id,
        cast(file_name as string) as file_name,
        cast(file_sha256 as string) as file_sha256,
        cast(created_at as timestamp) as created_at,
        -- when the file says it was measured: null when it does not say (never the time it was
        -- added); a landing from before the column (no received_at either) of a plain run file
        -- was measured when it was created (benchwh bench), the one case created_at says so
        case
            when measured_at is null and received_at is null and source = 'runfile'
                then cast(created_at as timestamp)
            else cast(measured_at as timestamp)
        end as measured_at,
        -- when the file reached the warehouse (the raw store's time for older landings)
        coalesce(cast(received_at as timestamp), cast(_fetched_at as timestamp)) as received_at,
        cast(trust as string) as trust,
        -- the one place the rule is written: signed and source rows count in summaries and site tables
        coalesce(trust in ('signed', 'source'), false) as is_countable,
        cast(keyid as string) as keyid,
        cast(contributor as string) as contributor,
        cast(gpu as string) as raw_hardware_name,
        cast(gpu_count as integer) as gpu_count,
        cast(gpu_memory_gb as double) as gpu_memory_gb,
        cast(cpu as string) as raw_cpu_name,
        cast(ram_gb as double) as ram_gb,
        cast(os as string) as os,
        cast(country as string) as country,
        cast(engine_name as string) as engine,
        cast(engine_version as string) as engine_version,
        cast(engine_backend as string) as engine_backend,
        cast(model_name as string) as raw_model_name,
        cast(model_repo as string) as model_repo,
        cast(model_file as string) as model_file_name,
        cast(model_quant as string) as raw_quant,
        cast(model_file_size_bytes as bigint) as model_file_size_bytes,
        cast(model_sha256 as string) as model_sha256,
        cast(model_params as bigint) as model_params,
        cast(protocol_name as string) as protocol_name,
        cast(protocol_prompt_tokens as bigint) as protocol_prompt_tokens,
        cast(protocol_gen_tokens as bigint) as protocol_gen_tokens,
        cast(protocol_sampling as string) as protocol_sampling,
        cast(protocol_repetitions as integer) as protocol_repetitions,
        cast(power_method as string) as power_method,
        cast(power_avg_watts as double) as power_avg_w,
        cast(power_energy_j as double) as energy_j,
        cast(memory_peak_bytes as bigint) as peak_memory_bytes,
        cast(recall_stop_reason as string) as recall_stop_reason,
        cast(recall_stop_at_tokens as bigint) as recall_stop_at_tokens,
        cast(n_samples as integer) as n_samples,
        -- the run's configuration (DESIGN §5 dim_run_config): runs that differ here never pool
        -- a landing from before configurations were kept has none: 'unreported', one group of its own
        coalesce(cast(config_key as string), 'unreported') as config_id,
        cast(devices as string) as devices,
        cast(offload as string) as offload,
        cast(n_gpu_layers as integer) as n_gpu_layers,
        cast(flash_attn as string) as flash_attn,
        cast(n_batch as integer) as n_batch,
        cast(n_ubatch as integer) as n_ubatch,
        cast(n_threads as integer) as n_threads,
        cast(type_k as string) as type_k,
        cast(type_v as string) as type_v,
        cast(split_mode as string) as split_mode,
        cast(tensor_split as string) as tensor_split,
        cast(n_cpu_moe as integer) as n_cpu_moe,
        cast(concurrency as integer) as concurrency,
        cast(request_rate as string) as request_rate,
        cast(client_api as string) as client_api,
        coalesce(cast(is_cpu_fallback as boolean), false) as is_cpu_fallback,
        coalesce(cast(is_partial_offload as boolean), false) as is_partial_offload,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as landed_from_fetched_at,
        cast(_record_index as bigint) as record_index
    from source
)

select * from renamed

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
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as landed_from_fetched_at,
        cast(_record_index as bigint) as record_index
    from source
)

select * from renamed

with source as (
    select * from {{ source('runs', 'runs') }}
),

renamed as (
    select
        cast(source as varchar) as source,
        cast(source_run_id as varchar) as source_run_id,
        cast(submission_id as varchar) as submission_id,
        cast(file_name as varchar) as file_name,
        cast(file_sha256 as varchar) as file_sha256,
        cast(created_at as timestamp) as created_at,
        cast(trust as varchar) as trust,
        -- the one place the rule is written: signed and source rows count in summaries and site tables
        coalesce(cast(trust as varchar) in ('signed', 'source'), false) as is_countable,
        cast(keyid as varchar) as keyid,
        cast(contributor as varchar) as contributor,
        cast(gpu as varchar) as raw_hardware_name,
        cast(gpu_count as integer) as gpu_count,
        cast(gpu_memory_gb as double) as gpu_memory_gb,
        cast(cpu as varchar) as raw_cpu_name,
        cast(ram_gb as double) as ram_gb,
        cast(os as varchar) as os,
        cast(country as varchar) as country,
        cast(engine_name as varchar) as engine,
        cast(engine_version as varchar) as engine_version,
        cast(engine_backend as varchar) as engine_backend,
        cast(model_name as varchar) as raw_model_name,
        cast(model_repo as varchar) as model_repo,
        cast(model_file as varchar) as model_file_name,
        cast(model_quant as varchar) as raw_quant,
        cast(model_file_size_bytes as bigint) as model_file_size_bytes,
        cast(model_sha256 as varchar) as model_sha256,
        cast(model_params as bigint) as model_params,
        cast(protocol_name as varchar) as protocol_name,
        cast(protocol_prompt_tokens as bigint) as protocol_prompt_tokens,
        cast(protocol_gen_tokens as bigint) as protocol_gen_tokens,
        cast(protocol_sampling as varchar) as protocol_sampling,
        cast(protocol_repetitions as integer) as protocol_repetitions,
        cast(power_method as varchar) as power_method,
        cast(power_avg_watts as double) as power_avg_w,
        cast(power_energy_j as double) as energy_j,
        cast(memory_peak_bytes as bigint) as peak_memory_bytes,
        cast(recall_stop_reason as varchar) as recall_stop_reason,
        cast(recall_stop_at_tokens as bigint) as recall_stop_at_tokens,
        cast(n_samples as integer) as n_samples,
        cast(_raw_sha256 as varchar) as raw_sha256,
        cast(_fetched_at as timestamp) as landed_from_fetched_at,
        cast(_record_index as bigint) as record_index
    from source
)

select * from renamed

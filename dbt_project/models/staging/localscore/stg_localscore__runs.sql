with source as (
    select * from {{ source('localscore', 'runs') }}
),

renamed as (
    select
        cast(run_id as bigint) as run_id,
        cast(created_at as timestamp) as created_at,
        cast(accelerator_id as bigint) as accelerator_id,
        cast(accelerator_name as string) as accelerator_name,
        cast(accelerator_type as string) as accelerator_type,
        cast(accelerator_memory_gb as double) as accelerator_memory_gb,
        cast(accelerator_manufacturer as string) as accelerator_manufacturer,
        cast(model_id as bigint) as model_id,
        cast(model_variant_id as bigint) as model_variant_id,
        cast(model_name as string) as model_name,
        cast(model_quant as string) as model_quant,
        cast(model_params as bigint) as model_params,
        cast(runtime_id as bigint) as runtime_id,
        cast(runtime_name as string) as runtime_name,
        cast(runtime_version as string) as runtime_version,
        cast(runtime_commit as string) as runtime_commit,
        cast(system_id as bigint) as system_id,
        cast(cpu_name as string) as cpu_name,
        cast(cpu_arch as string) as cpu_arch,
        cast(ram_gb as double) as ram_gb,
        cast(kernel_type as string) as os_name,
        cast(kernel_release as string) as os_release,
        cast(system_version as string) as system_version,
        cast(avg_prompt_tps as double) as avg_prompt_tps,
        cast(avg_gen_tps as double) as avg_gen_tps,
        cast(avg_ttft_ms as double) as avg_ttft_ms,
        cast(performance_score as double) as performance_score,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as fetched_at,
        cast(_record_index as bigint) as record_index
    from source
)

select * from renamed

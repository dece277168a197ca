with source as (
    select * from {{ source('runs', 'samples') }}
),

renamed as (
    select
        cast(source as string) as source,
        cast(source_run_id as string) as source_run_id,
        cast(test_name as string) as test_name,
        cast(test_index as integer) as test_index,
        cast(sample_index as integer) as repetition_index,
        cast(n_prompt as bigint) as n_prompt,
        cast(n_gen as bigint) as n_gen,
        cast(n_depth as bigint) as n_depth,
        cast(ttft_ms as double) as ttft_ms,
        cast(prompt_tps as double) as prompt_tps,
        cast(gen_tps as double) as gen_tps,
        cast(turn_time_ms as double) as turn_time_ms,
        cast(is_test_mean as boolean) as is_test_mean,
        cast(power_w as double) as power_w,
        cast(energy_j as double) as energy_j,
        cast(peak_memory_bytes as bigint) as peak_memory_bytes,
        cast(measured_at as timestamp) as measured_at,
        cast(test_key as string) as test_key,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as landed_from_fetched_at,
        cast(_record_index as bigint) as record_index
    from source
)

select * from renamed

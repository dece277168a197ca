with source as (
    select * from {{ source('localscore', 'tests') }}
),

renamed as (
    select
        cast(run_id as bigint) as run_id,
        cast(test_id as bigint) as test_id,
        cast(test_index as integer) as test_index,
        cast(test_name as string) as test_name,
        cast(n_prompt as integer) as n_prompt,
        cast(n_gen as integer) as n_gen,
        cast(avg_time_ms as double) as avg_time_ms,
        cast(prompt_tps as double) as prompt_tps,
        cast(gen_tps as double) as gen_tps,
        cast(ttft_ms as double) as ttft_ms,
        -- LocalScore stores 0 W when the machine has no power reading (CPUs, most laptops)
        cast(nullif(power_watts, 0) as double) as power_w,
        coalesce(power_watts > 0, false) as has_power_reading,
        cast(nullif(prompt_tps_watt, 0) as double) as prompt_tps_per_w,
        cast(nullif(gen_tps_watt, 0) as double) as gen_tps_per_w,
        cast(vram_used_mb as double) as vram_used_mb,
        cast(created_at as timestamp) as created_at,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as fetched_at,
        cast(_record_index as bigint) as record_index
    from source
)

select * from renamed

with source as (
    select * from {{ source('runs', 'context_recall') }}
),

renamed as (
    select
        cast(source as string) as source,
        cast(source_run_id as string) as source_run_id,
        cast(step_index as integer) as step_index,
        cast(context_tokens as bigint) as context_tokens,
        cast(is_recalled as boolean) as is_recalled,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as landed_from_fetched_at
    from source
)

select * from renamed

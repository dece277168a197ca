with source as (
    select * from {{ source('runs', 'capabilities') }}
),

renamed as (
    select
        cast(source as string) as source,
        cast(source_run_id as string) as source_run_id,
        cast(capability as string) as capability,
        cast(has_passed as boolean) as has_passed,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as landed_from_fetched_at
    from source
)

select * from renamed

with source as (
    select * from {{ source('quarantine', 'records') }}
),

renamed as (
    select
        cast(source as string) as source,
        cast(entity as string) as entity,
        cast(raw_sha256 as string) as raw_sha256,
        cast(record_index as bigint) as record_index,
        cast(record as string) as record,
        cast(column_name as string) as column_name,
        cast(check_name as string) as check_name,
        cast(failure_value as string) as failure_value,
        cast(quarantined_at as timestamp) as quarantined_at
    from source
)

select * from renamed

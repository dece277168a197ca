with source as (
    select * from {{ source('quarantine', 'records') }}
),

renamed as (
    select
        cast(source as varchar) as source,
        cast(entity as varchar) as entity,
        cast(raw_sha256 as varchar) as raw_sha256,
        cast(record_index as bigint) as record_index,
        cast(record as varchar) as record,
        cast(column_name as varchar) as column_name,
        cast(check_name as varchar) as check_name,
        cast(failure_value as varchar) as failure_value,
        cast(quarantined_at as timestamp) as quarantined_at
    from source
)

select * from renamed

with source as (
    select * from {{ source('grid', 'intensity') }}
),

renamed as (
    select
        cast(area as string) as area,
        cast(area_code as string) as area_code,
        cast(iso3 as string) as iso3,
        cast(is_aggregate as boolean) as is_aggregate,
        cast(year as integer) as year,
        cast(gco2_per_kwh as double) as gco2_per_kwh,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as fetched_at
    from source
)

select * from renamed

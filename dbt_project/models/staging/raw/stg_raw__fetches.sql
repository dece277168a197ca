with source as (
    select * from {{ source('raw', 'fetches') }}
),

renamed as (
    select
        cast(source as varchar) as source,
        cast(url as varchar) as url,
        -- manifest times are ISO 8601 with `Z`; landing holds naive UTC, so convert the same way
        timezone('UTC', cast(fetched_at as timestamptz)) as fetched_at,
        cast(status as integer) as http_status,
        cast(sha256 as varchar) as raw_sha256,
        cast(bytes as bigint) as body_bytes,
        cast(ext as varchar) as file_ext,
        cast(path as varchar) as raw_path,
        cast(etag as varchar) as etag,
        cast(last_modified as varchar) as last_modified,
        cast(parser_version as varchar) as parser_version,
        cast(status as integer) = 304 as is_not_modified
    from source
)

select * from renamed

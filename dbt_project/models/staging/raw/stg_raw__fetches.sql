with source as (
    select * from {{ source('raw', 'fetches') }}
),

renamed as (
    select
        cast(source as string) as source,
        cast(url as string) as url,
        -- manifest times are ISO 8601 with `Z`; landing holds naive UTC, so convert the same way
        {{ utc_timestamp_from_text('fetched_at') }} as fetched_at,
        cast(status as integer) as http_status,
        cast(sha256 as string) as raw_sha256,
        cast(bytes as bigint) as body_bytes,
        cast(ext as string) as file_ext,
        cast(path as string) as raw_path,
        cast(etag as string) as etag,
        cast(last_modified as string) as last_modified,
        cast(parser_version as string) as parser_version,
        cast(status as integer) = 304 as is_not_modified
    from source
)

select * from renamed

with source as (
    select * from {{ source('huggingface', 'files') }}
),

renamed as (
    select
        cast(repo as varchar) as repo,
        cast(path as varchar) as path,
        cast(file_name as varchar) as file_name,
        cast(build_file_name as varchar) as build_file_name,
        cast(size_bytes as bigint) as size_bytes,
        cast(quant as varchar) as quant,
        cast(split_index as integer) as split_index,
        cast(split_count as integer) as split_count,
        cast(lfs_sha256 as varchar) as lfs_sha256,
        cast(_raw_sha256 as varchar) as raw_sha256,
        cast(_fetched_at as timestamp) as fetched_at
    from source
)

select * from renamed

with source as (
    select * from {{ source('huggingface', 'files') }}
),

renamed as (
    select
        cast(repo as string) as repo,
        cast(path as string) as path,
        cast(file_name as string) as file_name,
        cast(build_file_name as string) as build_file_name,
        cast(size_bytes as bigint) as size_bytes,
        cast(quant as string) as quant,
        cast(split_index as integer) as split_index,
        cast(split_count as integer) as split_count,
        cast(lfs_sha256 as string) as lfs_sha256,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as fetched_at
    from source
)

select * from renamed

-- One row per GGUF build of a Hugging Face repo: the latest listing of each file, split parts
-- (-00001-of-0000N) summed into one build. A build missing parts is kept and flagged.
with files as (
    select
        *,
        row_number() over (partition by repo, path order by fetched_at desc, raw_sha256 asc) as recency
    from {{ ref('stg_huggingface__files') }}
),

latest as (
    select * from files
    where recency = 1
)

select
    repo,
    build_file_name as file_name,
    min(quant) as quant,
    cast(sum(size_bytes) as bigint) as file_size_bytes,
    count(*) as n_parts,
    coalesce(max(split_count), 1) as n_parts_expected,
    count(*) = coalesce(max(split_count), 1) as is_complete,
    max(fetched_at) as listed_at
from latest
group by repo, build_file_name

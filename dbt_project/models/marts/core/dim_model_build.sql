-- One row per model x quantization (build_id = '<model_id>@<quant>'): every build that was
-- measured and every GGUF build listed in a catalogued Hugging Face repository. The file named
-- is the representative one: from the first repository in the catalogue's hf_gguf_repos order
-- that lists the quant (its size is what the runtime loads, split parts summed), else the file
-- name a run reported (size unknown).
with catalogue_repos as (
    select
        model_id,
        trim(unnest(repos)) as repo,
        unnest(generate_series(1, len(repos))) as repo_position
    from (
        select model_id, string_split(hf_gguf_repos, ';') as repos
        from {{ ref('model_catalogue') }}
        where hf_gguf_repos is not null
    )
),

quant_names as (
    select upper(quant) as quant_key, quant from {{ ref('quantizations') }}
    union
    select upper(alias), quant from {{ ref('quantization_aliases') }}
),

-- complete GGUF builds of the repositories the catalogue lists (Hugging Face source)
listed as (
    select
        r.model_id,
        coalesce(q.quant, upper(b.quant)) as quant,
        b.repo,
        b.file_name,
        b.file_size_bytes,
        r.repo_position
    from {{ ref('int_gguf_builds_summed') }} as b
    inner join catalogue_repos as r on lower(b.repo) = lower(r.repo)
    left join quant_names as q on upper(b.quant) = q.quant_key
    where b.quant is not null and b.is_complete
),

listed_best as (
    select *
    from listed
    qualify row_number() over (
        partition by model_id, quant order by repo_position, file_size_bytes, file_name
    ) = 1
),

measured as (
    select model_id, quant, min(model_file_name) as file_name
    from {{ ref('int_speed_samples_resolved') }}
    group by model_id, quant
),

builds as (
    select model_id, quant from listed_best
    union
    select model_id, quant from measured
)

select
    b.model_id || '@' || b.quant as build_id,
    b.model_id,
    b.quant,
    coalesce(l.file_name, m.file_name) as file_name,
    cast(l.file_size_bytes as bigint) as file_size_bytes,
    l.repo as hf_repo,
    cast(q.gguf_file_type as integer) as gguf_file_type,
    q.bits_per_weight,
    m.model_id is not null as is_measured
from builds as b
left join listed_best as l using (model_id, quant)
left join measured as m using (model_id, quant)
left join {{ ref('quantizations') }} as q on b.quant = q.quant

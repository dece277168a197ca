-- One row per model x quantization x file (DESIGN §5; build ids: int_build_files_resolved):
-- every build that was measured and every complete GGUF file listed in a catalogued Hugging Face
-- repository, so bartowski's and unsloth's Q4_K_M of one model are two builds. The file size is
-- the one a run reported for the file, else the Hub's (split parts summed); the quantizer is
-- the packager, the repository's owner.
with catalogue_repos as (
    select model_id, repo, repo_position from {{ ref('int_catalogue_gguf_repos_split') }}
),

quant_names as (
    select upper(quant) as quant_key, quant from {{ ref('quantizations') }}
    union
    select upper(alias), quant from {{ ref('quantization_aliases') }}
),

-- complete GGUF builds of the repositories the catalogue lists (Hugging Face source)
listed as (
    {% call keep_first('repo, file_name', 'repo_position, model_id') -%}
    select
        r.model_id,
        coalesce(q.quant, upper(b.quant)) as quant,
        lower(b.repo) as repo,
        b.file_name,
        b.file_size_bytes,
        r.repo_position
    from {{ ref('int_gguf_builds_summed') }} as b
    inner join catalogue_repos as r on lower(b.repo) = lower(r.repo)
    left join quant_names as q on upper(b.quant) = q.quant_key
    where b.quant is not null and b.is_complete
    {%- endcall %}
    -- a repository the catalogue lists under two models belongs to the first (keep_first above)
),

listed_builds as (
    select
        model_id || '@' || quant || '@' || repo || '/' || file_name as build_id,
        model_id, quant, repo, file_name, file_size_bytes, cast(null as string) as sha256
    from listed
),

measured_builds as (
    select
        build_id,
        any_value(model_id) as model_id,
        any_value(quant) as quant,
        any_value(repo) as repo,
        any_value(model_file_name) as file_name,
        max(reported_file_size_bytes) as file_size_bytes,
        max(reported_sha256) as sha256
    from {{ ref('int_build_files_resolved') }}
    where build_id is not null
    group by build_id
),

-- a build measured without naming its file (LocalScore: model@quant) weighs what the first
-- catalogued repository's file of that quant weighs, so memory and expected speed still apply
representative_sizes as (
    select model_id, quant, file_size_bytes
    from (
        {% call keep_first('model_id, quant', 'repo_position, repo, file_name') -%}
            select * from listed
        {%- endcall %}
    ) as first_listed
),

builds as (
    select
        coalesce(m.build_id, l.build_id) as build_id,
        coalesce(m.model_id, l.model_id) as model_id,
        coalesce(m.quant, l.quant) as quant,
        coalesce(m.repo, l.repo) as repo,
        coalesce(m.file_name, l.file_name) as file_name,
        coalesce(m.file_size_bytes, l.file_size_bytes, r.file_size_bytes) as file_size_bytes,
        case when m.file_size_bytes is not null then 'run'
            when l.file_size_bytes is not null then 'hub'
            when r.file_size_bytes is not null then 'hub-representative'
        end as file_size_source,
        m.sha256,
        m.build_id is not null as is_measured
    from measured_builds as m
    full outer join listed_builds as l on l.build_id = m.build_id
    left join representative_sizes as r
        on m.file_name is null and r.model_id = m.model_id and r.quant = m.quant
)

select
    b.build_id,
    b.model_id,
    b.quant,
    b.file_name,
    cast(b.file_size_bytes as bigint) as file_size_bytes,
    b.repo,
    split_part(b.repo, '/', 1) as quantizer,
    b.sha256,
    b.file_size_source,
    -- kept for readers of the earlier column name
    b.repo as hf_repo,
    cast(q.gguf_file_type as integer) as gguf_file_type,
    q.bits_per_weight,
    b.is_measured
from builds as b
left join {{ ref('quantizations') }} as q on b.quant = q.quant

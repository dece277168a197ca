-- Hugging Face GGUF builds of catalogue models: each build of a repo the model catalogue lists
-- under hf_gguf_repos, with the catalogue's model_id and the base model's shape repo.
-- Complete builds only (a split build missing parts has no usable size).
with catalogue as (
    select
        model_id,
        hf_base_repo,
        trim(repo) as repo,
        repo_position
    from {{ ref('model_catalogue') }},
        unnest(string_split_regex(coalesce(hf_gguf_repos, ''), '[;|,\s]+')) with ordinality as repos(repo, repo_position)
    where trim(repo) <> ''
)

select
    catalogue.model_id,
    builds.repo,
    catalogue.repo_position,
    builds.file_name,
    builds.quant,
    builds.file_size_bytes,
    builds.n_parts,
    catalogue.hf_base_repo,
    builds.listed_at
from {{ ref('int_gguf_builds_summed') }} as builds
inner join catalogue on catalogue.repo = builds.repo
where builds.is_complete

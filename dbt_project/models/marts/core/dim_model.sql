-- Every catalogued model, plus one row per provisional id for names no catalogue entry matches
-- (named by the most frequent raw name), so nothing measured is dropped.
with catalogue as (
    select
        model_id, name, family, params_b, openrouter_id, hf_base_repo, hf_gguf_repos, ollama_tag,
        true as is_catalogued
    from {{ ref('model_catalogue') }}
),

provisional as (
    select
        model_id,
        coalesce(arg_max(coalesce(raw_model_name, model_file_name), n_runs), '(missing)') as name,
        cast(null as varchar) as family,
        cast(null as double) as params_b,
        cast(null as varchar) as openrouter_id,
        cast(null as varchar) as hf_base_repo,
        cast(null as varchar) as hf_gguf_repos,
        cast(null as varchar) as ollama_tag,
        false as is_catalogued
    from {{ ref('int_model_names_resolved') }}
    where not is_catalogued
    group by model_id
)

select * from catalogue
union all
select * from provisional

-- One row per GGUF repository the model catalogue lists for a model (hf_gguf_repos is a
-- ';'-separated list), with its position in that list: the first listed repo is preferred.
select
    model_id,
    trim(unnest(repos)) as repo,
    unnest(generate_series(1, len(repos))) as repo_position
from (
    select model_id, string_split(hf_gguf_repos, ';') as repos
    from {{ ref('model_catalogue') }}
    where hf_gguf_repos is not null
)

-- One row per GGUF repository the model catalogue lists for a model (hf_gguf_repos is a
-- ';'-separated list), with its position in that list: the first listed repo is preferred.
select
    catalogue.model_id,
    trim(_split.repo) as repo,
    {{ split_position('_split.repo_position') }} as repo_position
from {{ ref('model_catalogue') }} as catalogue
{{ lateral_split('catalogue', 'hf_gguf_repos', ';', 'repo', 'repo_position') }}
where catalogue.hf_gguf_repos is not null

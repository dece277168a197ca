-- One row per (raw model name, model file, raw quant, repository) seen in the speed samples, with
-- the build it names: model x quantization x file (DESIGN §5). The repository is the one the run
-- reported, else the first catalogued Hugging Face repository of the model that lists the same
-- file name. build_id:
--   '<model_id>@<quant>'                        no file known (LocalScore names a quant only)
--   '<model_id>@<quant>@<repo>/<file name>'     file and repository known (repo lower-cased)
--   '<model_id>@<quant>@<file name>'            a file no known repository lists
-- so two packagers' Q4_K_M of one model are two builds.
with observed as (
    select
        raw_model_name, model_file_name, raw_quant, model_repo,
        max(model_file_size_bytes) as reported_file_size_bytes,
        max(lower(model_sha256)) as reported_sha256
    from {{ ref('int_speed_samples_unioned') }}
    group by all
),

models as (
    select raw_model_name, model_file_name, model_id from {{ ref('int_model_names_resolved') }}
),

quants as (
    select raw_quant, model_file_name, quant from {{ ref('int_quant_names_resolved') }}
),

catalogue_repos as (
    select model_id, repo, repo_position from {{ ref('int_catalogue_gguf_repos_split') }}
),

listed_files as (
    select r.model_id, lower(b.repo) as repo, b.file_name, r.repo_position
    from {{ ref('int_gguf_builds_summed') }} as b
    inner join catalogue_repos as r on lower(b.repo) = lower(r.repo)
),

-- per model and file name the first listed repository that holds it
first_listed_files as (
    {% call keep_first('model_id, file_name', 'repo_position, repo') -%}
        select model_id, file_name, repo, repo_position from listed_files
    {%- endcall %}
),

resolved as (
    select
        o.*,
        m.model_id,
        q.quant,
        coalesce(lower(o.model_repo), l.repo) as repo
    from observed as o
    left join models as m
        on o.raw_model_name is not distinct from m.raw_model_name
        and o.model_file_name is not distinct from m.model_file_name
    left join quants as q
        on o.raw_quant is not distinct from q.raw_quant
        and o.model_file_name is not distinct from q.model_file_name
    left join first_listed_files as l
        on l.model_id = m.model_id and l.file_name = o.model_file_name
)

select
    raw_model_name,
    model_file_name,
    raw_quant,
    model_repo,
    model_id,
    quant,
    repo,
    case
        when model_file_name is null then model_id || '@' || quant
        when repo is not null then model_id || '@' || quant || '@' || repo || '/' || model_file_name
        else model_id || '@' || quant || '@' || model_file_name
    end as build_id,
    reported_file_size_bytes,
    reported_sha256
from resolved

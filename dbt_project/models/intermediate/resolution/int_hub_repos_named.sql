-- One row per (raw model name, model file name, repository) the speed samples name, with the runs
-- naming it: the run's own repository (a run file's model.repo), else the repository of an
-- Ollama tag `hf.co/<org>/<repo>:<quant>`, else the one listed repository whose listing holds
-- the reported file name (a llama-bench model_filename). The bound of Hub resolution: only
-- these repositories are followed (ingest/sources/hub_models.py fetches the same set).
with observed as (
    select
        raw_model_name,
        model_file_name,
        nullif(trim(coalesce(
            model_repo,
            regexp_extract(raw_model_name, '^(?:https?://)?(?:hf\.co|huggingface\.co)/([^/:\s]+/[^/:\s]+)', 1)
        )), '') as named_repo,
        count(distinct source || '|' || source_run_id) as n_runs
    from {{ ref('int_speed_samples_unioned') }}
    group by all
),

-- a file name listed by exactly one repository names that repository
unique_files as (
    select file_name, min(repo) as repo
    from {{ ref('int_gguf_builds_summed') }}
    group by file_name
    having count(distinct lower(repo)) = 1
)

-- one row per key: runs that name the repository and runs whose file it lists count together
-- ('named' wins over 'listed_file')
select
    o.raw_model_name,
    o.model_file_name,
    coalesce(o.named_repo, f.repo) as repo,
    max(case when o.named_repo is not null then 'named' else 'listed_file' end) as how_named,
    cast(sum(o.n_runs) as bigint) as n_runs
from observed as o
left join unique_files as f on o.named_repo is null and f.file_name = o.model_file_name
where coalesce(o.named_repo, f.repo) is not null
group by o.raw_model_name, o.model_file_name, coalesce(o.named_repo, f.repo)

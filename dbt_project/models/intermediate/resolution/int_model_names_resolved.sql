-- One row per (raw model name, model file name) seen in the speed samples, with the catalogue
-- model it resolves to. The name is tried first, the file name second. Order of evidence:
--   1. an exact alias, catalogue name, model id, OpenRouter id, Ollama tag or HF repo, ignoring
--      case and repeated spaces ("light" key) -- so the Ollama tag `llama3:8b` is the instruct
--      model even though its normalised form equals the base model's name;
--   2. equal normalised keys (macros/normalise_names.sql), preferring catalogue names, then
--      aliases, ids, repositories and tags;
--   0. before any name: the repository the run names, resolved through the Hub or the catalogue
--      (int_hub_models_resolved): the repo is stronger evidence than a free-typed name;
--   3. otherwise a provisional id 'unresolved:<normalised name>' (listed in audit.unresolved_names).
with observed as (
    select raw_model_name, model_file_name, count(distinct source || '|' || source_run_id) as n_runs
    from {{ ref('int_speed_samples_unioned') }}
    group by all
),

catalogue as (
    select * from {{ ref('model_catalogue') }}
),

candidate_names as (
    select model_id, name as candidate_name, 1 as priority from catalogue
    union all
    select model_id, alias, 2 from {{ ref('model_aliases') }}
    union all
    select model_id, model_id, 3 from catalogue
    union all
    select model_id, hf_base_repo, 4 from catalogue
    where hf_base_repo is not null
    union all
    select catalogue.model_id, trim(_split.repo), 5
    from catalogue
    {{ lateral_split('catalogue', 'hf_gguf_repos', ';', 'repo', 'repo_position') }}
    where catalogue.hf_gguf_repos is not null
    union all
    select model_id, openrouter_id, 6 from catalogue
    where openrouter_id is not null
    union all
    select model_id, ollama_tag, 7 from catalogue
    where ollama_tag is not null
),

candidates as (
    select
        model_id,
        priority,
        {{ light_name_key('candidate_name') }} as light_key,
        {{ normalise_model_name('candidate_name') }} as normalised_key
    from candidate_names
),

-- the name as reported first, the file name second
attempts as (
    select raw_model_name, model_file_name, 1 as attempt, raw_model_name as attempted_name from observed
    union all
    select raw_model_name, model_file_name, 2, model_file_name from observed
    where model_file_name is not null
),

keyed_attempts as (
    select
        *,
        {{ light_name_key('attempted_name') }} as light_key,
        {{ normalise_model_name('attempted_name') }} as normalised_key
    from attempts
),

matches as (
    select a.raw_model_name, a.model_file_name, a.attempt, 1 as step, c.priority, c.model_id
    from keyed_attempts as a
    inner join candidates as c on a.light_key = c.light_key
    union all
    select a.raw_model_name, a.model_file_name, a.attempt, 2 as step, c.priority, c.model_id
    from keyed_attempts as a
    inner join candidates as c on a.normalised_key = c.normalised_key
),

best as (
    select raw_model_name, model_file_name, model_id, step
    from (
        select
            *,
            row_number() over (
                partition by raw_model_name, model_file_name
                order by attempt, step, priority, model_id
            ) as preference
        from matches
    ) as ranked
    where preference = 1
),

-- the model of the repository the name/file was named with (the most runs' when several)
hub as (
    select n.raw_model_name, n.model_file_name, {{ arg_max("h.model_id", "n.n_runs") }} as model_id
    from {{ ref('int_hub_repos_named') }} as n
    inner join {{ ref('int_hub_models_resolved') }} as h on h.repo = n.repo
    group by all
),

keyed as (
    select
        raw_model_name,
        model_file_name,
        n_runs,
        coalesce(
            {{ normalise_model_name('raw_model_name') }},
            {{ normalise_model_name('model_file_name') }}
        ) as normalised_key
    from observed
)

select
    k.raw_model_name,
    k.model_file_name,
    k.normalised_key,
    coalesce(
        h.model_id,
        b.model_id,
        {{ provisional_id('k.normalised_key', 'coalesce(k.raw_model_name, k.model_file_name)') }}
    )
        as model_id,
    -- true for Hub-resolved models too: "matched a known model" (dim_model.is_resolved)
    coalesce(h.model_id, b.model_id) is not null as is_catalogued,
    case when h.model_id is not null then 'hub'
        else case b.step when 1 then 'exact' when 2 then 'normalised' else 'unresolved' end
    end as match_method,
    k.n_runs
from keyed as k
left join best as b
    on k.raw_model_name is not distinct from b.raw_model_name
    and k.model_file_name is not distinct from b.model_file_name
left join hub as h
    on k.raw_model_name is not distinct from h.raw_model_name
    and k.model_file_name is not distinct from h.model_file_name

-- One row per repository the runs name (int_hub_repos_named) that the Hub or the catalogue knows,
-- with the model it packages. Order of evidence:
--   1. the catalogue lists the repository (hf_gguf_repos) or its model (hf_base_repo): the
--      catalogue's model_id (the hand catalogue stays the override and the display name);
--   2. the repository's model info (stg_huggingface__model_infos): a GGUF repo (relation
--      'quantized', a gguf block or a 'gguf' tag) packages its card's base_model, any other repo
--      is the model itself. That model keeps its own id (the repo name, lower case) and, when its
--      card says it is a fine-tune, merge or adapter of another owner's model (an abliteration
--      of Meta's Llama), links to that model as base_model_id. A vendor's own instruct release of
--      its base (same owner) is the vendor's model, not linked.
-- Architecture numbers come from the model's config.json, else its base's; parameters from
-- safetensors.total, else the base's, else the GGUF's gguf.total.
with named as (
    select distinct repo from {{ ref('int_hub_repos_named') }}
),

infos as (
    {% call keep_first('lower(repo)', 'fetched_at desc, raw_sha256 asc') -%}
        select * from {{ ref('stg_huggingface__model_infos') }}
    {%- endcall %}
),

shapes as (
    select * from {{ ref('int_model_shapes_latest') }}
),

catalogue_gguf as (
    select lower(repo) as repo_key, min(model_id) as model_id
    from {{ ref('int_catalogue_gguf_repos_split') }}
    group by 1
),

catalogue_base as (
    select lower(hf_base_repo) as repo_key, min(model_id) as model_id
    from {{ ref('model_catalogue') }}
    where hf_base_repo is not null
    group by 1
),

packaged as (
    select
        n.repo,
        r.repo is not null as has_info,
        case
            when r.repo is null then null
            when coalesce(r.base_model_relation, '') = 'quantized' or r.gguf_params is not null
                or {{ list_contains(string_split("lower(coalesce(r.tags, ''))", ';'), "'gguf'") }}
                then coalesce(r.base_model, r.repo)
            else r.repo
        end as model_repo,
        r.gguf_params,
        r.license as repo_license
    from named as n
    left join infos as r on lower(r.repo) = lower(n.repo)
),

with_model as (
    select
        p.*,
        m.base_model as origin_repo,
        m.base_model_relation as origin_relation,
        coalesce(m.base_model_relation in ('finetune', 'merge', 'adapter'), false)
        and m.base_model is not null
        and lower(split_part(m.base_model, '/', 1)) <> lower(split_part(p.model_repo, '/', 1)) as is_derivative,
        m.license as model_license,
        m.safetensors_params as model_params,
        o.safetensors_params as origin_params,
        o.license as origin_license,
        m.model_type as info_model_type
    from packaged as p
    left join infos as m on lower(m.repo) = lower(p.model_repo)
    left join infos as o on lower(o.repo) = lower(m.base_model)
),

resolved as (
    select
        w.*,
        coalesce(
            cg.model_id, cb.model_id,
            case
                when w.model_repo is null then null
                -- the repo name, unless a catalogue id or another owner's model already has it
                -- (a re-upload of Qwen3-4B is not the catalogue's qwen3-4b): then owner--name
                when lower(split_part(w.model_repo, '/', 2)) in (select model_id from {{ ref('model_catalogue') }})
                    or {{ count_distinct_over('lower(w.model_repo)', "lower(split_part(w.model_repo, '/', 2))") }}
                    > 1
                    then lower(replace(w.model_repo, '/', '--'))
                else lower(split_part(w.model_repo, '/', 2))
            end
        ) as model_id,
        coalesce(cg.model_id, cb.model_id) is not null as is_catalogued,
        case when w.is_derivative
                then coalesce(ob.model_id, lower(split_part(w.origin_repo, '/', 2)))
        end as base_model_id,
        -- the repo the family is read from: the origin of a derivative, else the model itself
        lower(split_part(case when w.is_derivative then w.origin_repo else w.model_repo end, '/', 2)) as family_source
    from with_model as w
    left join catalogue_gguf as cg on cg.repo_key = lower(w.repo)
    left join catalogue_base as cb on cb.repo_key = lower(w.model_repo)
    left join catalogue_base as ob on ob.repo_key = lower(w.origin_repo)
),

familied as (
    select
        r.*,
        regexp_extract(r.family_source, '^([a-z]+)', 1) as family_word,
        regexp_extract(r.family_source, '^[a-z]+[-_ ]?([0-9]+)(?:\.[0-9]+)*([a-z]?)', 1) as family_version,
        regexp_extract(r.family_source, '^[a-z]+[-_ ]?([0-9]+)(?:\.[0-9]+)*([a-z]?)', 2) as version_unit
    from resolved as r
),

family_words as (
    select regexp_extract(family, '^([a-z]+)', 1) as family_word, min(display_name) as display_name
    from {{ ref('model_families') }}
    group by 1
)

select
    f.repo,
    f.model_id,
    f.is_catalogued,
    f.model_repo,
    f.origin_repo,
    f.origin_relation,
    f.is_derivative,
    f.base_model_id,
    -- "granite-4.2-3b-instruct" -> granite4; a number followed by b/m is a size (bonsai-8b -> bonsai)
    nullif(f.family_word || case when f.version_unit in ('b', 'm', 'k') then '' else f.family_version end, '')
        as family,
    coalesce(
        fam.display_name, words.display_name,
        upper(left(f.family_word, 1)) || substr(f.family_word, 2)
    ) as family_display,
    coalesce(f.model_params, f.origin_params, f.gguf_params) / 1e9 as params_b,
    case when f.model_params is not null then 'safetensors'
        when f.origin_params is not null then 'base safetensors'
        when f.gguf_params is not null then 'gguf'
    end as params_source,
    coalesce(f.model_license, f.origin_license, f.repo_license) as license,
    coalesce(ms.repo, os.repo) as config_repo,
    coalesce(ms.model_type, os.model_type, f.info_model_type) as architecture,
    coalesce(ms.num_hidden_layers, os.num_hidden_layers) as num_hidden_layers,
    coalesce(ms.num_key_value_heads, os.num_key_value_heads) as num_key_value_heads,
    coalesce(ms.head_dim, os.head_dim) as head_dim,
    coalesce(ms.trained_context_tokens, os.trained_context_tokens) as trained_context_tokens,
    case when ms.repo is not null then ms.sliding_window else os.sliding_window end as sliding_window,
    f.has_info
from familied as f
left join shapes as ms on lower(ms.repo) = lower(f.model_repo)
left join shapes as os on ms.repo is null and lower(os.repo) = lower(f.origin_repo)
left join {{ ref('model_families') }} as fam
    on fam.family
    = nullif(f.family_word || case when f.version_unit in ('b', 'm', 'k') then '' else f.family_version end, '')
left join family_words as words on words.family_word = f.family_word
where f.model_id is not null

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
        coalesce({{ arg_max("coalesce(raw_model_name, model_file_name)", "n_runs") }}, '(missing)') as name,
        -- the family word the normalised name starts with ("granite4.2 3b" -> granite), for display
        nullif(regexp_extract({{ arg_max("normalised_key", "n_runs") }}, '^([a-z]+)', 1), '') as family,
        cast(null as double) as params_b,
        cast(null as string) as openrouter_id,
        cast(null as string) as hf_base_repo,
        cast(null as string) as hf_gguf_repos,
        cast(null as string) as ollama_tag,
        false as is_catalogued
    from {{ ref('int_model_names_resolved') }}
    where not is_catalogued
    group by model_id
),

-- models resolved through the Hugging Face Hub that the catalogue does not hold
-- (intermediate/resolution/int_hub_models_resolved), named by their most frequent raw name
hub_models as (
    select
        h.model_id,
        coalesce(
            {{ arg_max("coalesce(n.raw_model_name, n.model_file_name)", "n.n_runs") }},
            split_part(any_value(h.model_repo), '/', 2)
        ) as name,
        any_value(h.family) as family,
        any_value(h.params_b) as params_b,
        cast(null as string) as openrouter_id,
        any_value(h.model_repo) as hf_base_repo,
        {{ string_agg_distinct("h.repo", ";") }} as hf_gguf_repos,
        cast(null as string) as ollama_tag,
        false as is_catalogued
    from {{ ref('int_hub_models_resolved') }} as h
    left join {{ ref('int_model_names_resolved') }} as n
        on n.model_id = h.model_id and n.match_method = 'hub'
    where not h.is_catalogued
    group by h.model_id
),

hub_facts as (
    select
        model_id,
        any_value(family_display) as family_display,
        any_value(base_model_id) as base_model_id,
        any_value(license) as license,
        any_value(architecture) as architecture,
        any_value(config_repo) as config_repo
    from {{ ref('int_hub_models_resolved') }}
    group by model_id
),

-- OpenRouter ids that match no catalogue model keep their provisional id in fct_api_prices:
-- each gets a row too, named by OpenRouter's latest display name
provisional_priced as (
    select
        model_id,
        {{ arg_max("coalesce(model_name, openrouter_id)", "valid_from") }} as name,
        cast(null as string) as family,
        cast(null as double) as params_b,
        cast(null as string) as openrouter_id,
        cast(null as string) as hf_base_repo,
        cast(null as string) as hf_gguf_repos,
        cast(null as string) as ollama_tag,
        false as is_catalogued
    from {{ ref('fct_api_prices') }}
    where not is_model_in_catalogue
        and model_id not in (select model_id from provisional)
        and model_id not in (select model_id from hub_models)
    group by model_id
),

all_models as (
    select * from catalogue
    union all
    select * from hub_models
    union all
    select * from provisional
    union all
    select * from provisional_priced
),

-- fine-tunes, merges and abliterations keep their own (provisional) id and link to the catalogue
-- model their name derives from ("llama3.2 3b instruct abliterated" -> llama-3.2-3b-instruct)
derived_from as (
    select
        p.model_id,
        min(c.model_id) as base_model_id
    from (
        select
            model_id,
            trim({{ regexp_replace_all(
                arg_max("normalised_key", "n_runs"),
                "\\b(abliterated|uncensored|heretic|merged?|finetuned?|fine tuned?|lora|dpo|orpo)\\b", " "
            ) }})
                as stripped_key,
            {{ arg_max("normalised_key", "n_runs") }} as normalised_key
        from {{ ref('int_model_names_resolved') }}
        where not is_catalogued
        group by model_id
    ) as p
    inner join {{ ref('model_catalogue') }} as c
        on {{ regexp_replace_all("p.stripped_key", "\\s+", " ") }} in (
            {{ normalise_model_name('c.name') }}, {{ normalise_model_name('c.model_id') }}
        )
    where p.stripped_key <> p.normalised_key
    group by p.model_id
),

-- a provisional model's family word met in the families seed ("gemma" of gemma3) prints as that family
family_words as (
    select regexp_extract(family, '^([a-z]+)', 1) as family_word, min(display_name) as display_name
    from {{ ref('model_families') }}
    group by all
)

select
    all_models.*,
    -- the family as a page prints it ("Llama", not llama3); a provisional model's own family word
    -- capitalised ("Bonsai") when the seed does not know it
    case
        when all_models.is_catalogued then coalesce(families.display_name, all_models.family)
        when hub_models.model_id is not null then hub_facts.family_display
        else coalesce(words.display_name, upper(left(all_models.family, 1)) || substr(all_models.family, 2))
    end as family_display,
    coalesce(derived_from.base_model_id, case when not all_models.is_catalogued then hub_facts.base_model_id end)
        as base_model_id,
    -- resolved: in the catalogue or through the Hub (int_hub_models_resolved); provisional ids are not
    all_models.is_catalogued or hub_models.model_id is not null as is_resolved,
    case when all_models.is_catalogued then 'catalogue' when hub_models.model_id is not null then 'hub' end
        as resolved_by,
    hub_facts.license,
    -- the architecture shape from config.json (the Hub-resolved config, else the catalogue's base repo)
    coalesce(shapes.model_type, hub_facts.architecture) as architecture,
    shapes.num_hidden_layers,
    shapes.num_attention_heads,
    shapes.num_key_value_heads,
    shapes.head_dim,
    shapes.trained_context_tokens
from all_models
left join {{ ref('model_families') }} as families on families.family = all_models.family
left join family_words as words on not all_models.is_catalogued and words.family_word = all_models.family
left join derived_from on derived_from.model_id = all_models.model_id
left join hub_models on hub_models.model_id = all_models.model_id
left join hub_facts on hub_facts.model_id = all_models.model_id
left join {{ ref('int_model_shapes_latest') }} as shapes
    on lower(shapes.repo) = lower(coalesce(hub_facts.config_repo, all_models.hf_base_repo))

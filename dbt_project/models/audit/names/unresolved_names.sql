-- Names from every source that matched no catalogue entry, per source and kind, with how many
-- runs (speed sources) or snapshots (OpenRouter) carry them and the closest catalogue entry
-- (Jaro-Winkler similarity of the normalised names), so whoever adds a source sees what to map
-- in seeds/*_aliases.csv. Also listed: catalogue openrouter_ids that no OpenRouter snapshot
-- lists (source model_catalogue, kind openrouter_id), a typo there silently loses the API price.
with hardware_seen as (
    select source, raw_hardware_name, hardware_memory_gb, count(distinct source_run_id) as occurrences
    from {{ ref('int_speed_samples_unioned') }}
    group by all
),

models_seen as (
    select source, raw_model_name, model_file_name, count(distinct source_run_id) as occurrences
    from {{ ref('int_speed_samples_unioned') }}
    group by all
),

quants_seen as (
    select source, raw_quant, model_file_name, count(distinct source_run_id) as occurrences
    from {{ ref('int_speed_samples_unioned') }}
    group by all
),

-- a run carries one name of each kind, so runs per (source, raw name) add up across the
-- memories / file names it was seen with
hardware_unresolved as (
    select
        s.source, 'hardware' as kind, s.raw_hardware_name as raw_name, r.normalised_key,
        s.occurrences
    from hardware_seen as s
    inner join {{ ref('int_hardware_names_resolved') }} as r
        on s.raw_hardware_name is not distinct from r.raw_hardware_name
        and s.hardware_memory_gb is not distinct from r.hardware_memory_gb
    where not r.is_catalogued
),

model_unresolved as (
    select
        s.source, 'model' as kind, coalesce(s.raw_model_name, s.model_file_name) as raw_name,
        r.normalised_key, s.occurrences
    from models_seen as s
    inner join {{ ref('int_model_names_resolved') }} as r
        on s.raw_model_name is not distinct from r.raw_model_name
        and s.model_file_name is not distinct from r.model_file_name
    where not r.is_catalogued
),

quant_unresolved as (
    select
        s.source, 'quant' as kind, coalesce(s.raw_quant, s.model_file_name) as raw_name,
        r.quant as normalised_key, s.occurrences
    from quants_seen as s
    inner join {{ ref('int_quant_names_resolved') }} as r
        on s.raw_quant is not distinct from r.raw_quant
        and s.model_file_name is not distinct from r.model_file_name
    where not r.is_catalogued
),

openrouter_unresolved as (
    select
        'openrouter' as source, 'model' as kind, openrouter_id as raw_name,
        {{ normalise_model_name('openrouter_id') }} as normalised_key,
        sum(n_observations) as occurrences
    from {{ ref('fct_api_prices') }}
    where not is_model_in_catalogue
    group by openrouter_id
),

catalogue_openrouter_ids_unlisted as (
    select
        'model_catalogue' as source, 'openrouter_id' as kind, c.openrouter_id as raw_name,
        cast(null as string) as normalised_key, 0 as occurrences
    from {{ ref('model_catalogue') }} as c
    where c.openrouter_id is not null
        and c.openrouter_id not in (select openrouter_id from {{ ref('stg_openrouter__models') }})
        and exists (select 1 from {{ ref('stg_openrouter__models') }})
),

unresolved as (
    select * from hardware_unresolved
    union all
    select * from model_unresolved
    union all
    select * from quant_unresolved
    union all
    select * from openrouter_unresolved
    union all
    select * from catalogue_openrouter_ids_unlisted
),

catalogue_keys as (
    select 'hardware' as kind, hardware_id as entry_id, {{ normalise_hardware_name('name') }} as entry_key
    from {{ ref('hardware_catalogue') }}
    union all
    select 'model', model_id, {{ normalise_model_name('name') }}
    from {{ ref('model_catalogue') }}
    union all
    select 'quant', quant, upper(quant)
    from {{ ref('quantizations') }}
),

closest as (
    select
        u.kind,
        u.normalised_key,
        {{ arg_max("c.entry_id", name_similarity("u.normalised_key", "c.entry_key")) }} as closest_match,
        max({{ name_similarity("u.normalised_key", "c.entry_key") }}) as closest_similarity
    from (
        select distinct kind, normalised_key from unresolved
        where normalised_key is not null
    ) as u
    inner join catalogue_keys as c on u.kind = c.kind
    group by all
),

listed as (
    select
        u.source,
        u.kind,
        coalesce(u.raw_name, '(missing)') as raw_name,
        cast(sum(u.occurrences) as bigint) as occurrences,
        any_value(c.closest_match) as closest_match,
        max(c.closest_similarity) as closest_similarity
    from unresolved as u
    left join closest as c
        on u.kind = c.kind and u.normalised_key = c.normalised_key
    group by u.source, u.kind, coalesce(u.raw_name, '(missing)')
)

-- the seed line that maps the name onto its closest entry, to paste once checked (CSV-quoted)
select
    *,
    case
        when raw_name = '(missing)' or closest_match is null or kind = 'openrouter_id' then null
        else
            case kind when 'hardware' then 'hardware_aliases.csv: ' when 'model' then 'model_aliases.csv: '
                else 'quantization_aliases.csv: '
            end
            || '"' || replace(raw_name, '"', '""') || '",' || closest_match || ',"' || source || ' name"'
    end as alias_line
from listed

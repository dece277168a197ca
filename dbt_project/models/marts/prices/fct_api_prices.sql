-- API price validity ranges per OpenRouter model, derived from the sequence of snapshot
-- observations alone (DESIGN §1: no state kept between runs).
--
-- An observation is one fetch of the /models snapshot whose body landed: its own 200 and every
-- 304 that confirmed the same body later. A model's range runs over consecutive observations
-- with the same prices (gaps and islands); it closes at the first observation where the price
-- differs or the model is missing, and stays open (valid_to null) while the latest observation
-- still lists it unchanged.

with models as (
    -- a model priced by the router ("-1", has_fixed_price false) has no price to range over
    select * from {{ ref('stg_openrouter__models') }}
    where has_fixed_price is not false
),

fetches as (
    select * from {{ ref('stg_raw__fetches') }}
),

catalogue as (
    select * from {{ ref('model_catalogue') }}
),

aliases as (
    select * from {{ ref('model_aliases') }}
),

landed_bodies as (
    select distinct raw_sha256 from models
),

-- a fetch whose body was rejected or failed landing is no evidence that models vanished
observations as (
    select distinct
        fetches.fetched_at as observed_at,
        fetches.raw_sha256
    from fetches
    inner join landed_bodies on fetches.raw_sha256 = landed_bodies.raw_sha256
    where fetches.source = 'openrouter'
        and fetches.http_status in (200, 304)
),

sequenced as (
    select
        observed_at,
        raw_sha256,
        row_number() over (order by observed_at, raw_sha256) as observation_seq
    from observations
),

observed_prices as (
    select
        sequenced.observation_seq,
        sequenced.observed_at,
        models.openrouter_id,
        models.model_name,
        models.is_free_variant,
        models.prompt_usd_per_mtok,
        models.completion_usd_per_mtok,
        models.request_usd
    from sequenced
    inner join models on models.raw_sha256 = sequenced.raw_sha256
),

-- a new range starts when the model was absent from the previous observation or a price changed
flagged as (
    select
        *,
        case
            when
                (lag(observation_seq) over by_model is distinct from (observation_seq - 1))
                or (lag(prompt_usd_per_mtok) over by_model is distinct from prompt_usd_per_mtok)
                or (lag(completion_usd_per_mtok) over by_model is distinct from completion_usd_per_mtok)
                or (lag(request_usd) over by_model is distinct from request_usd)
                then 1
            else 0
        end as starts_range
    from observed_prices
    window by_model as (partition by openrouter_id order by observation_seq)
),

numbered as (
    select
        *,
        sum(starts_range) over (
            partition by openrouter_id order by observation_seq rows unbounded preceding
        ) as range_number
    from flagged
),

ranges as (
    select
        openrouter_id,
        range_number,
        min(observed_at) as valid_from,
        max(observed_at) as last_seen_at,
        max(observation_seq) as last_observation_seq,
        count(*) as n_observations,
        {{ arg_max("model_name", "observation_seq") }} as model_name,
        bool_or(is_free_variant) as is_free_variant,
        -- constant within a range by construction
        min(prompt_usd_per_mtok) as prompt_usd_per_mtok,
        min(completion_usd_per_mtok) as completion_usd_per_mtok,
        min(request_usd) as request_usd
    from numbered
    group by openrouter_id, range_number
),

-- canonical model of each OpenRouter id, most specific evidence first: the catalogue's own
-- openrouter_id, an alias, the catalogue's id without the `:free`-style variant, then the shared
-- name normalisation (only when exactly one catalogue model has that key). Otherwise the same
-- provisional id the dims give an unmatched name.
listed_ids as (
    select distinct
        openrouter_id,
        regexp_replace(openrouter_id, ':[a-z0-9_-]+$', '') as base_openrouter_id,
        {{ normalise_model_name('openrouter_id') }} as name_key
    from ranges
),

catalogue_by_openrouter_id as (
    select openrouter_id, min(model_id) as model_id
    from catalogue
    where openrouter_id is not null
    group by openrouter_id
),

catalogue_by_base_id as (
    select regexp_replace(openrouter_id, ':[a-z0-9_-]+$', '') as base_openrouter_id, min(model_id) as model_id
    from catalogue
    where openrouter_id is not null
    group by all
    having count(distinct model_id) = 1
),

catalogue_keys as (
    select model_id, {{ normalise_model_name('model_id') }} as name_key from catalogue
    union
    select model_id, {{ normalise_model_name('name') }} as name_key from catalogue
    union
    select model_id, {{ normalise_model_name('alias') }} as name_key from aliases
),

catalogue_by_key as (
    select name_key, min(model_id) as model_id
    from catalogue_keys
    where name_key is not null
    group by name_key
    having count(distinct model_id) = 1
),

resolved_ids as (
    select
        listed_ids.openrouter_id,
        coalesce(
            by_id.model_id, by_alias.model_id, by_base_id.model_id, by_key.model_id
        ) as catalogue_model_id,
        {{ provisional_id('listed_ids.name_key', 'listed_ids.openrouter_id') }} as provisional_model_id
    from listed_ids
    left join catalogue_by_openrouter_id as by_id on listed_ids.openrouter_id = by_id.openrouter_id
    left join aliases as by_alias on listed_ids.openrouter_id = by_alias.alias
    left join catalogue_by_base_id as by_base_id on listed_ids.base_openrouter_id = by_base_id.base_openrouter_id
    left join catalogue_by_key as by_key on listed_ids.name_key = by_key.name_key
),

final as (
    select
        ranges.openrouter_id,
        coalesce(resolved_ids.catalogue_model_id, resolved_ids.provisional_model_id) as model_id,
        resolved_ids.catalogue_model_id is not null as is_model_in_catalogue,
        ranges.model_name,
        ranges.valid_from,
        next_observation.observed_at as valid_to,
        ranges.prompt_usd_per_mtok,
        ranges.completion_usd_per_mtok,
        ranges.request_usd,
        next_observation.observed_at is null as is_current,
        ranges.is_free_variant,
        ranges.prompt_usd_per_mtok = 0 and ranges.completion_usd_per_mtok = 0 as is_free,
        ranges.last_seen_at,
        ranges.n_observations
    from ranges
    inner join resolved_ids on ranges.openrouter_id = resolved_ids.openrouter_id
    left join sequenced as next_observation
        on next_observation.observation_seq = ranges.last_observation_seq + 1
)

select * from final

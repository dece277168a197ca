-- One row per build: the size it held and what a machine needs to hold it, as the fits-on section
-- of the reference page (model-page-llama-3.2-3b.txt) counts it. Held = the largest peak a
-- trusted run measured, else the estimate at the default context, else the file size; needed =
-- held plus a fifth for the prompt. Counted are the measured builds with a known size; a model
-- none of whose measured builds has a size counts its listed builds. site.model_fits_on (bars)
-- and site.model_builds (ticks) both read this, so the rule is written once.
with builds as (
    select * from {{ ref('dim_model_build') }}
),

peaks as (
    select build_id, max(peak_memory_bytes) as peak_bytes
    from {{ ref('fct_speed_measurements') }}
    where is_countable and not is_duplicate and peak_memory_bytes > 0
    group by build_id
),

estimates as (
    select build_id, estimated_bytes from {{ ref('fct_memory_requirements') }}
    where is_default_context
),

sized as (
    select
        builds.build_id,
        builds.model_id,
        builds.is_measured,
        coalesce(peaks.peak_bytes, estimates.estimated_bytes, builds.file_size_bytes) as held_bytes,
        case
            when peaks.peak_bytes is not null then 'measured_peak'
            when estimates.estimated_bytes is not null then 'estimate'
            when builds.file_size_bytes is not null then 'file'
        end as held_basis
    from builds
    left join peaks on peaks.build_id = builds.build_id
    left join estimates on estimates.build_id = builds.build_id
),

flagged as (
    select
        *,
        coalesce(
            bool_or(is_measured and held_bytes > 0) over (partition by model_id), false
        ) as has_measured_sized_build
    from sized
)

select
    build_id,
    model_id,
    cast(held_bytes as bigint) as held_bytes,
    held_basis,
    cast(ceil(held_bytes * 1.2) as bigint) as needed_bytes,
    coalesce(held_bytes > 0 and (is_measured or not has_measured_sized_build), false) as is_counted
from flagged

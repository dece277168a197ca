-- Carbon intensity per area and year from the latest grid export observed (its own 200 or a
-- later 304 confirming it), not from the body first fetched latest: a body seen again after a
-- revision is the current one.

with intensities as (
    select * from {{ ref('stg_grid__intensities') }}
),

fetches as (
    select * from {{ ref('stg_raw__fetches') }}
),

latest_observation as (
    select
        fetches.raw_sha256,
        fetches.fetched_at
    from fetches
    where fetches.source = 'grid'
        and fetches.http_status in (200, 304)
        and fetches.raw_sha256 in (select distinct raw_sha256 from intensities)
    order by fetches.fetched_at desc, fetches.raw_sha256 asc
    limit 1
),

final as (
    select
        intensities.area,
        intensities.iso3,
        intensities.year,
        intensities.gco2_per_kwh,
        intensities.area_code,
        intensities.is_aggregate,
        intensities.area = 'World' as is_world,
        latest_observation.fetched_at as source_fetched_at,
        intensities.raw_sha256 as source_raw_sha256
    from intensities
    inner join latest_observation on intensities.raw_sha256 = latest_observation.raw_sha256
)

select * from final

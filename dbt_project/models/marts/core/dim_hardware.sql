-- Every catalogued machine, plus one row per provisional id for names no catalogue entry
-- matches (named by the most frequent raw name; specs unknown), so nothing measured is dropped.
with catalogue as (
    select
        hardware_id, name, vendor, kind, memory_gb, memory_bandwidth_gbps, tdp_w,
        launch_price_usd, true as is_catalogued
    from {{ ref('hardware_catalogue') }}
),

provisional as (
    select
        hardware_id,
        coalesce(arg_max(raw_hardware_name, n_runs), '(missing)') as name,
        cast(null as varchar) as vendor,
        cast(null as varchar) as kind,
        max(hardware_memory_gb) as memory_gb,
        cast(null as double) as memory_bandwidth_gbps,
        cast(null as double) as tdp_w,
        cast(null as double) as launch_price_usd,
        false as is_catalogued
    from {{ ref('int_hardware_names_resolved') }}
    where not is_catalogued
    group by hardware_id
)

select * from catalogue
union all
select * from provisional

-- Every catalogued machine, plus one row per Apple GPU-core variant seen (the chip's specs, its
-- own id: int_hardware_names_resolved), plus one row per provisional id for names no catalogue
-- entry matches (named by the most frequent raw name; specs unknown), so nothing measured is dropped.
-- Card memory: the catalogue's nominal "GB" of a card is binary (a 24 GB card holds 24 x 2^30
-- bytes): memory_bytes holds it, memory_gib says it in 2^30, memory_gb in 1e9 (DESIGN §5 sizes).
with catalogue_entries as (
    select
        hardware_id, name, vendor, kind, memory_gb as memory_gib, memory_bandwidth_gbps, tdp_w,
        launch_price_usd, true as is_catalogued, hardware_id as base_hardware_id,
        cast(null as integer) as gpu_cores
    from {{ ref('hardware_catalogue') }}
),

variants as (
    select distinct
        r.hardware_id, c.name || ' (' || r.gpu_cores || '-core GPU)' as name, c.vendor, c.kind,
        c.memory_gib, c.memory_bandwidth_gbps, c.tdp_w, c.launch_price_usd, true as is_catalogued,
        c.hardware_id as base_hardware_id, r.gpu_cores
    from {{ ref('int_hardware_names_resolved') }} as r
    inner join catalogue_entries as c on c.hardware_id = r.base_hardware_id
    where r.hardware_id <> r.base_hardware_id
),

catalogue as (
    select * from catalogue_entries
    union all
    select * from variants
),

provisional as (
    select
        hardware_id,
        coalesce({{ arg_max("raw_hardware_name", "n_runs") }}, '(missing)') as name,
        cast(null as string) as vendor,
        cast(null as string) as kind,
        max(hardware_memory_gb) as memory_gib,
        cast(null as double) as memory_bandwidth_gbps,
        cast(null as double) as tdp_w,
        cast(null as double) as launch_price_usd,
        false as is_catalogued,
        cast(null as string) as base_hardware_id,
        cast(null as integer) as gpu_cores
    from {{ ref('int_hardware_names_resolved') }}
    where not is_catalogued
    group by hardware_id
),

all_hardware as (
    select * from catalogue
    union all
    select * from provisional
)

select
    hardware_id, name, vendor, kind,
    round(memory_gib * 1073741824 / 1e9, 3) as memory_gb,
    memory_bandwidth_gbps, tdp_w, launch_price_usd, is_catalogued,
    cast(round(memory_gib * 1073741824) as bigint) as memory_bytes,
    memory_gib,
    base_hardware_id,
    gpu_cores
from all_hardware

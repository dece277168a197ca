-- Expected generation speed where nobody measured a (hardware, build) pair (DESIGN §7):
--   expected tok/s = engine efficiency x memory bandwidth / weights bytes
-- for every catalogue machine with a bandwidth and a memory size that holds the build at the
-- default context, and every engine whose fit rests on enough measured pairs.
with fits as (
    select * from {{ ref('drv_expected_speed_fits_computed') }}
    where fit_n >= {{ var('expected_speed_min_fit_pairs') }}
),

measured as (
    select distinct hardware_id, build_id
    from {{ ref('fct_speed_measurements') }}
    where is_countable and not is_duplicate and gen_tps > 0
),

builds as (
    select build_id, weights_bytes, estimated_bytes
    from {{ ref('drv_memory_estimates_computed') }}
    where is_default_context and weights_basis = 'file'
),

hardware as (
    select hardware_id, memory_bandwidth_gbps, memory_bytes
    from {{ ref('dim_hardware') }}
    where memory_bandwidth_gbps > 0 and memory_bytes > 0
)

select
    hardware.hardware_id,
    builds.build_id,
    fits.engine,
    hardware.memory_bandwidth_gbps * 1e9 / builds.weights_bytes as theoretical_tps,
    fits.efficiency,
    fits.efficiency * hardware.memory_bandwidth_gbps * 1e9 / builds.weights_bytes as expected_gen_tps,
    fits.fit_n,
    fits.fit_mdape_pct,
    true as is_estimate
from hardware
inner join builds
    on builds.estimated_bytes <= hardware.memory_bytes
cross join fits
where not exists (
        select 1 from measured
        where measured.hardware_id = hardware.hardware_id and measured.build_id = builds.build_id
    )

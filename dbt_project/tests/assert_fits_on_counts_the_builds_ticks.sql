-- The fits-on bars draw a tick per build at site.model_builds.fits_needed_bytes; each bar's
-- "K of N" (site.model_fits_on) must count those same ticks, or the picture and the words differ.
with ticks as (
    select model_id, fits_needed_bytes from {{ ref('model_builds') }}
    where fits_needed_bytes is not null
),

counted as (
    select
        fits.model_id,
        fits.machine_kind,
        fits.builds_held,
        fits.builds_total,
        count(ticks.fits_needed_bytes) as n_ticks,
        count(ticks.fits_needed_bytes) filter (where ticks.fits_needed_bytes <= fits.memory_bytes) as n_ticks_held
    from {{ ref('model_fits_on') }} as fits
    left join ticks on ticks.model_id = fits.model_id
    group by fits.model_id, fits.machine_kind, fits.builds_held, fits.builds_total
)

select * from counted
where n_ticks != builds_total or n_ticks_held != builds_held

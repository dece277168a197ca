-- gCO2 per million generated tokens of each run (DESIGN §7):
--   gCO2/Mtok = J/token x 1e6 / 3.6e6 x gCO2/kWh
-- Intensity: the machine's country in the measurement year (else its latest earlier year),
-- else World the same way; when no year is early enough, the area's earliest year. The year is
-- the measurement's, else (a file that gave no time) the year the file was received.
with runs as (
    select * from {{ ref('drv_carbon_runs_measured') }}
    where j_per_token > 0
),

countries as (
    select * from {{ ref('country_codes') }}
),

grid as (
    select area, iso3, year, gco2_per_kwh, area = 'World' as is_world
    from {{ ref('fct_grid_intensity') }}
),

candidates as (
    select
        runs.source,
        runs.source_run_id,
        grid.area,
        grid.year,
        grid.gco2_per_kwh,
        grid.is_world,
        row_number() over (
            partition by runs.source, runs.source_run_id
            order by
                grid.is_world,  -- the country first, World as the fallback
                grid.year <= year(coalesce(runs.measured_at, runs.received_at)) desc,
                case
                    when grid.year <= year(coalesce(runs.measured_at, runs.received_at)) then -grid.year
                    else grid.year
                end
        ) as preference
    from runs
    left join countries
        on countries.iso2 = runs.country
    inner join grid
        on (grid.iso3 = countries.iso3 and not grid.is_world) or grid.is_world
)

select
    runs.source,
    runs.source_run_id,
    runs.hardware_id,
    runs.machine_id,
    runs.build_id,
    runs.model_id,
    runs.engine,
    runs.trust,
    runs.is_countable,
    runs.measured_at,
    runs.j_per_token,
    runs.method,
    runs.energy_basis,
    runs.country,
    chosen.area as grid_area,
    chosen.year as grid_year,
    chosen.gco2_per_kwh,
    case when chosen.is_world then 'world' else 'country' end as grid_basis,
    -- J/token x 1e6 / 3.6e6 x gCO2/kWh, written as J/token x gCO2/kWh / 3.6 (same value, fewer roundings)
    runs.j_per_token * chosen.gco2_per_kwh / 3.6 as gco2_per_mtok
from runs
inner join candidates as chosen
    on chosen.source = runs.source
    and chosen.source_run_id = runs.source_run_id
    and chosen.preference = 1

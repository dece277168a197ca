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

-- Each area's years as spans: a year's intensity holds from that year until the area's next one;
-- the earliest year also covers every year before it. One span matches any run year, so a run
-- joins its country's span, else World's, reading the runs once (a window over runs x grid rows
-- read them twice, and DuckDB held them in memory: out of 1 GB at scale 10).
grid_spans as (
    select
        area,
        iso3,
        year,
        gco2_per_kwh,
        area = 'World' as is_world,
        lead(year) over (partition by area order by year) as next_year,
        year = min(year) over (partition by area) as is_earliest
    from {{ ref('fct_grid_intensity') }}
),

runs_dated as (
    select
        runs.*,
        countries.iso3,
        year(coalesce(runs.measured_at, runs.received_at)) as run_year
    from runs
    left join countries
        on countries.iso2 = runs.country
),

chosen as (
    select
        runs_dated.*,
        coalesce(country_grid.area, world_grid.area) as grid_area,
        coalesce(country_grid.year, world_grid.year) as grid_year,
        coalesce(country_grid.gco2_per_kwh, world_grid.gco2_per_kwh) as gco2_per_kwh,
        country_grid.area is null as is_world
    from runs_dated
    left join grid_spans as country_grid
        on country_grid.iso3 = runs_dated.iso3
        and not country_grid.is_world
        and case
            when runs_dated.run_year is null then country_grid.is_earliest
            else (country_grid.year <= runs_dated.run_year or country_grid.is_earliest)
                and (country_grid.next_year is null or runs_dated.run_year < country_grid.next_year)
        end
    left join grid_spans as world_grid
        on world_grid.is_world
        and case
            when runs_dated.run_year is null then world_grid.is_earliest
            else (world_grid.year <= runs_dated.run_year or world_grid.is_earliest)
                and (world_grid.next_year is null or runs_dated.run_year < world_grid.next_year)
        end
)

select
    source,
    source_run_id,
    hardware_id,
    machine_id,
    build_id,
    model_id,
    engine,
    trust,
    is_countable,
    measured_at,
    j_per_token,
    method,
    energy_basis,
    country,
    grid_area,
    grid_year,
    gco2_per_kwh,
    case when is_world then 'world' else 'country' end as grid_basis,
    -- J/token x 1e6 / 3.6e6 x gCO2/kWh, written as J/token x gCO2/kWh / 3.6 (same value, fewer roundings)
    j_per_token * gco2_per_kwh / 3.6 as gco2_per_mtok
from chosen
where grid_area is not null

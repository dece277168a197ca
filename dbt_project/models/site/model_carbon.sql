-- A model's carbon per machine: among its builds measured on the machine (signed or source
-- runs), the one with the lowest median gCO2 per million generated tokens, with its J/token,
-- whether energy was measured by a sensor or modelled, and the grid data used.
with runs as (
    select * from {{ ref('fct_carbon_per_mtok') }}
    where trust in ('signed', 'source') and model_id is not null and hardware_id is not null
),

per_build as (
    select
        model_id,
        hardware_id,
        build_id,
        median(gco2_per_mtok) as gco2_per_mtok,
        median(j_per_token) as j_per_token,
        case
            when bool_and(method = 'sensor') then 'sensor'
            when bool_and(method = 'modelled') then 'modelled'
            else 'mixed'
        end as method,
        mode(grid_area) as grid_area,
        max(grid_year) as grid_year,
        count(*) as n_runs
    from runs
    group by model_id, hardware_id, build_id
)

select
    per_build.model_id,
    model.name as model_name,
    per_build.hardware_id,
    hardware.name as hardware_name,
    per_build.build_id,
    build.quant,
    per_build.gco2_per_mtok,
    per_build.j_per_token,
    per_build.method,
    per_build.grid_area,
    per_build.grid_year,
    per_build.n_runs
from per_build
left join {{ ref('dim_model') }} as model on model.model_id = per_build.model_id
left join {{ ref('dim_hardware') }} as hardware on hardware.hardware_id = per_build.hardware_id
left join {{ ref('dim_model_build') }} as build on build.build_id = per_build.build_id
qualify row_number() over (
    partition by per_build.model_id, per_build.hardware_id
    order by per_build.gco2_per_mtok, per_build.build_id
) = 1

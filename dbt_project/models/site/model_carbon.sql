-- Reference page "Carbon per million tokens" (model-page-llama-3.2-3b.txt): one row per build x
-- machine x grid area (signed or source runs). The row's J/token is the median over its runs,
-- its intensity the area's latest year among them, and its gCO2/Mtok is computed from those two
-- columns of the same row (J/token x gCO2/kWh / 3.6, DESIGN §7), so every row checks out by hand.
-- is_lowest_on_machine marks the build a page shows per machine (the fewest grams).
with runs as (
    select * from {{ ref('fct_carbon_per_mtok') }}
    where is_countable and model_id is not null and hardware_id is not null
),

per_row as (
    select
        model_id,
        build_id,
        machine_id,
        grid_area,
        any_value(hardware_id) as hardware_id,
        median(j_per_token) as j_per_token,
        max(grid_year) as grid_year,
        {{ arg_max("gco2_per_kwh", "grid_year") }} as gco2_per_kwh,
        any_value(grid_basis) as grid_basis,
        case
            when bool_and(method = 'sensor') then 'sensor'
            when bool_and(method = 'modelled') then 'modelled'
            else 'mixed'
        end as method,
        count(*) as n_runs
    from runs
    group by model_id, build_id, machine_id, grid_area
),

carbon as (
    select
        per_row.model_id,
        model.name as model_name,
        per_row.build_id,
        build.quant,
        build.quantizer,
        per_row.machine_id,
        machine.machine_kind,
        machine.headline_label,
        per_row.hardware_id,
        hardware.name as hardware_name,
        per_row.grid_area,
        per_row.grid_year,
        per_row.grid_basis,
        per_row.gco2_per_kwh,
        per_row.j_per_token,
        per_row.j_per_token * per_row.gco2_per_kwh / 3.6 as gco2_per_mtok,
        per_row.method,
        cast(per_row.n_runs as bigint) as n_runs,
        row_number() over (
            partition by per_row.model_id, per_row.machine_id
            order by per_row.j_per_token * per_row.gco2_per_kwh, per_row.build_id, per_row.grid_area
        ) = 1 as is_lowest_on_machine,
        coalesce(nullif(machine.headline_label, ''), hardware.name, per_row.machine_id) as base_label
    from per_row
    left join {{ ref('dim_model') }} as model on model.model_id = per_row.model_id
    left join {{ ref('dim_hardware') }} as hardware on hardware.hardware_id = per_row.hardware_id
    left join {{ ref('dim_model_build') }} as build on build.build_id = per_row.build_id
    left join {{ ref('dim_machine') }} as machine on machine.machine_id = per_row.machine_id
),

-- the section's sentence, beside every row of the model: "1 of 1 read off a power sensor"
lowest_counts as (
    select
        model_id,
        count(*) as n_machines,
        sum(case when method = 'sensor' then 1 else 0 end) as n_machines_sensor
    from carbon
    where is_lowest_on_machine
    group by model_id
),

labelled as (
    select
        {{ star_except(['base_label'], 'carbon.') }},
        -- two machines that read alike ("Linux · NVIDIA 24 GB · ...") are told apart by their id, as
        -- the reference page does ("Gram ·a5be46"): a bar per machine, never two stacked under one name
        case
            when {{ count_distinct_over('carbon.machine_id', 'carbon.model_id, carbon.base_label') }} > 1
                then carbon.base_label || ' · ' || substr(replace(carbon.machine_id, 'machine:', ''), 1, 6)
            else carbon.base_label
        end as machine_label,
        cast(lowest_counts.n_machines as bigint) as n_machines,
        cast(lowest_counts.n_machines_sensor as bigint) as n_machines_sensor
    from carbon
    inner join lowest_counts on lowest_counts.model_id = carbon.model_id
)

-- the bar's name as the chart draws it: the machine and the build
select
    *,
    machine_label || ' · ' || quant as bar_label
from labelled

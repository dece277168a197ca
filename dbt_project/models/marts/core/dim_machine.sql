-- One row per distinct machine the runs report (DESIGN §5): the resolved hardware with the
-- configuration a run states (GPU count, GPU memory, OS, CPU, RAM, country). Apple chips differ
-- by GPU cores (their hardware_id) and by memory configuration (gpu_memory_bytes, ram_bytes).
-- Reported memory is read as binary GB (a "24 GB" card, LocalScore's 23.99, a 16 GB Mac:
-- x 2^30 bytes). machine_kind is the label a page prints for the kind of machine ("2× Tesla T4",
-- "Windows, CPU only · 12 CPUs"); headline_label the one-line description of one machine.
-- Read per run from the union, with only the hardware resolution: a run states its machine once
-- for all its samples, and the resolved samples' other joins are not needed here.
with runs as (
    select distinct
        source, source_run_id, raw_hardware_name, hardware_memory_gb,
        gpu_count, os, cpu_name, ram_gb, country
    from {{ ref('int_speed_samples_unioned') }}
),

samples as (
    select
        runs.*,
        hardware.hardware_id,
        {{ machine_id('hardware.hardware_id', 'runs') }} as machine_id
    from runs
    left join {{ ref('int_hardware_names_resolved') }} as hardware
        on runs.raw_hardware_name is not distinct from hardware.raw_hardware_name
        and runs.hardware_memory_gb is not distinct from hardware.hardware_memory_gb
),

machines as (
    select
        machine_id,
        -- min(): one value per machine whatever the spelling, the same on every rebuild
        min(hardware_id) as hardware_id,
        min(coalesce(gpu_count, 1)) as gpu_count,
        min(hardware_memory_gb) as gpu_memory_gib,
        min(os) as os,
        min(cpu_name) as cpu,
        min(ram_gb) as ram_gib,
        min(upper(country)) as country,
        count(distinct source || '|' || source_run_id) as n_runs
    from samples
    where machine_id is not null
    group by machine_id
),

described as (
    select
        machines.*,
        hardware.name as hardware_name,
        hardware.vendor,
        hardware.kind as hardware_kind,
        -- cores from the CPU name: "16-Core Processor", Apple "10P+4E"
        coalesce(
            cast(nullif(regexp_extract(machines.cpu, '([0-9]+)-Core', 1), '') as integer),
            cast(nullif(regexp_extract(machines.cpu, '([0-9]+)P\s*\+\s*[0-9]+E', 1), '') as integer)
            + cast(nullif(regexp_extract(machines.cpu, '[0-9]+P\s*\+\s*([0-9]+)E', 1), '') as integer)
        ) as cpu_cores,
        -- plain OS family for labels: Darwin is macOS
        case
            when machines.os ilike '%darwin%' or machines.os ilike '%mac%' then 'macOS'
            when machines.os ilike '%windows%' then 'Windows'
            when machines.os ilike '%linux%' then 'Linux'
            else machines.os
        end as os_family
    from machines
    left join {{ ref('dim_hardware') }} as hardware on hardware.hardware_id = machines.hardware_id
)

select
    machine_id,
    hardware_id,
    cast(gpu_count as integer) as gpu_count,
    case when hardware_kind in ('gpu', 'soc') or hardware_kind is null
            then cast(round(gpu_memory_gib * 1073741824) as bigint)
    end as gpu_memory_bytes,
    os,
    cpu,
    cpu_cores,
    cast(round(ram_gib * 1073741824) as bigint) as ram_bytes,
    country,
    hardware_name,
    hardware_kind,
    case
        when hardware_kind = 'cpu'
            then concat_ws(
                    ' · ', coalesce(os_family, 'Unknown OS') || ', CPU only',
                    cpu_cores || ' CPUs'
                )
        when gpu_count > 1 then gpu_count || '× ' || hardware_name
        else hardware_name
    end as machine_kind,
    -- what a "fits on" bar measures: the cards' memory, else the RAM (CPUs; Apple's unified memory)
    case
        when hardware_kind = 'gpu' and gpu_memory_gib > 0
            then cast(round(gpu_count * gpu_memory_gib * 1073741824) as bigint)
        else cast(round(coalesce(ram_gib, gpu_memory_gib) * 1073741824) as bigint)
    end as usable_memory_bytes,
    case when hardware_kind = 'gpu' and gpu_memory_gib > 0 then 'card' else 'ram' end as usable_memory_kind,
    concat_ws(
        ' · ',
        os_family,
        case when hardware_kind <> 'cpu' and gpu_memory_gib > 0
                then case when gpu_count > 1 then gpu_count || '× ' else '' end
                    || coalesce(vendor, hardware_name) || ' ' || cast(round(gpu_memory_gib) as integer) || ' GB'
        end,
        cpu_cores || ' CPUs',
        case when ram_gib > 0 then cast(round(ram_gib) as integer) || ' GB RAM' end
    ) as headline_label,
    cast(n_runs as bigint) as n_runs
from described

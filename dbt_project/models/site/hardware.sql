-- Machine pages (/hardware/<hardware_id>): one row per hardware with signed or source runs
-- (duplicates left out), with its catalogue specs, the class a reader sorts it into ("24 GB
-- cards", "Apple, 64 GB unified", "CPU only") and how many runs and machines stand behind it.
-- A class's memory: a card's the catalogue's, else the card memory its machines reported; a
-- system on a chip's the unified memory its machines reported (the one with the most runs, the
-- larger on a tie), else the catalogue's base configuration.
with hardware as (
    select * from {{ ref('dim_hardware') }}
),

machines as (
    select * from {{ ref('dim_machine') }}
),

runs as (
    select * from {{ ref('fct_speed_runs') }}
    where is_countable and not is_duplicate
),

run_counts as (
    select
        hardware_id,
        count(*) as n_runs,
        count(distinct machine_id) as n_machines
    from runs
    group by hardware_id
),

machine_memories as (
    select
        runs.hardware_id,
        machines.usable_memory_kind as memory_kind,
        case
            when machines.usable_memory_kind = 'card' then machines.gpu_memory_bytes
            else machines.usable_memory_bytes
        end as memory_bytes,
        count(*) as n_runs
    from runs
    inner join machines on machines.machine_id = runs.machine_id
    group by
        runs.hardware_id,
        machines.usable_memory_kind,
        case
            when machines.usable_memory_kind = 'card' then machines.gpu_memory_bytes
            else machines.usable_memory_bytes
        end
),

reported_memories as (
    {% call keep_first('hardware_id', 'n_runs desc, memory_bytes desc, memory_kind') -%}
        select hardware_id, memory_kind, memory_bytes, n_runs
        from machine_memories
        where memory_bytes > 0
    {%- endcall %}
),

classed as (
    select
        hardware.hardware_id,
        hardware.kind,
        hardware.vendor,
        reported_memories.memory_kind as reported_memory_kind,
        case
            when hardware.kind = 'gpu'
                then coalesce(
                    hardware.memory_gib,
                    case when reported_memories.memory_kind = 'card' then cast(reported_memories.memory_bytes as double) / 1073741824 end
                )
            when hardware.kind = 'soc'
                then coalesce(
                    case when reported_memories.memory_kind = 'ram' then cast(reported_memories.memory_bytes as double) / 1073741824 end,
                    hardware.memory_gib
                )
            when hardware.kind is null and reported_memories.memory_kind = 'card'
                then cast(reported_memories.memory_bytes as double) / 1073741824
        end as class_memory_gib
    from hardware
    left join reported_memories on reported_memories.hardware_id = hardware.hardware_id
),

labelled as (
    select
        classed.*,
        cast(cast(round(classed.class_memory_gib) as bigint) as string) as class_memory_label
    from classed
)

select
    hardware.hardware_id,
    hardware.name as display_name,
    hardware.vendor,
    hardware.kind,
    hardware.memory_gib,
    hardware.memory_bandwidth_gbps,
    hardware.tdp_w,
    case
        when labelled.kind = 'cpu' then 'CPU only'
        when labelled.kind = 'soc' and labelled.class_memory_label is not null
            then coalesce(labelled.vendor, 'SoC') || ', ' || labelled.class_memory_label || ' GB unified'
        when labelled.kind = 'soc' then coalesce(labelled.vendor, 'SoC') || ', unified memory'
        when labelled.class_memory_label is not null then labelled.class_memory_label || ' GB cards'
        when labelled.kind = 'gpu' then 'GPU, memory unknown'
        else 'Unclassified'
    end as machine_class,
    cast(run_counts.n_runs as bigint) as n_runs,
    labelled.class_memory_gib,
    cast(run_counts.n_machines as bigint) as n_machines,
    hardware.launch_price_usd,
    coalesce(hardware.is_catalogued, false) as is_catalogued
from hardware
inner join run_counts on run_counts.hardware_id = hardware.hardware_id
inner join labelled on labelled.hardware_id = hardware.hardware_id

-- Reference page "What it fits on" (model-page-llama-3.2-3b.txt): per model, each kind of machine
-- on the network (dim_machine.machine_kind of every machine with trusted runs) with its memory
-- (its cards', else its RAM), the model's smallest build, and how many of the model's builds it
-- holds: what each build needs and which builds count are marts.fct_build_fit's.
with machines as (
    select distinct
        machine.machine_kind, machine.usable_memory_bytes as memory_bytes,
        machine.usable_memory_kind as memory_kind
    from {{ ref('dim_machine') }} as machine
    where machine.usable_memory_bytes > 0
        and machine.machine_id in (
            select machine_id from {{ ref('fct_speed_runs') }}
            where is_countable
        )
),

-- one memory per kind: a kind seen with several memories shows its most common one, the largest first
kinds as (
    select machine_kind, max(memory_bytes) as memory_bytes, any_value(memory_kind) as memory_kind
    from machines
    group by machine_kind
),

counted as (
    select model_id, build_id, held_bytes, needed_bytes
    from {{ ref('fct_build_fit') }}
    where is_counted
),

smallest as (
    select
        model_id, {{ first_by('build_id', ['needed_bytes', 'build_id']) }} as smallest_build_id,
        min(needed_bytes) as smallest_needed_bytes, count(*) as builds_total
    from counted
    group by model_id
),

fits as (
    select
        smallest.model_id,
        kinds.machine_kind,
        cast(kinds.memory_bytes as bigint) as memory_bytes,
        kinds.memory_kind,
        smallest.smallest_build_id,
        cast(smallest.smallest_needed_bytes as bigint) as smallest_needed_bytes,
        cast(count(counted.build_id) filter (where counted.needed_bytes <= kinds.memory_bytes) as bigint)
            as builds_held,
        cast(smallest.builds_total as bigint) as builds_total
    from smallest
    cross join kinds
    inner join counted on counted.model_id = smallest.model_id
    group by all
)

-- the section's sentence, beside every row of the model: "13 of 13 kinds of machine can hold it"
select
    fits.*,
    fits.builds_held = fits.builds_total as holds_every_build,
    cast(count(*) over (partition by fits.model_id) as bigint) as n_kinds,
    cast(sum(case when fits.builds_held > 0 then 1 else 0 end) over (partition by fits.model_id) as bigint)
        as n_kinds_holding,
    -- the bar's name and colour key, as the chart draws them
    fits.machine_kind || case when fits.memory_kind = 'card' then ' (on the card)' else ' (RAM)' end as kind_label,
    case
        when fits.builds_held = fits.builds_total then 'holds every build'
        when fits.builds_held > 0 then 'holds some builds'
        else 'holds none'
    end as held_state
from fits

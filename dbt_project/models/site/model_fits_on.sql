-- Reference page "What it fits on" (model-page-llama-3.2-3b.txt): per model, each kind of machine
-- on the network (dim_machine.machine_kind of every machine with trusted runs) with its memory
-- (its cards', else its RAM), the model's smallest build, and how many of the model's builds it
-- holds. A build needs the size it held plus a fifth for the prompt, as the page states: held =
-- the largest peak a trusted run measured, else the estimate at the default context, else the
-- file size. The builds counted are the measured ones with a known size; a model none of whose
-- measured builds has a size counts its listed builds.
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

peaks as (
    select build_id, max(peak_memory_bytes) as peak_bytes
    from {{ ref('fct_speed_measurements') }}
    where is_countable and not is_duplicate and peak_memory_bytes > 0
    group by build_id
),

estimates as (
    select build_id, estimated_bytes from {{ ref('fct_memory_requirements') }}
    where is_default_context
),

sized as (
    select
        builds.model_id,
        builds.build_id,
        builds.is_measured,
        coalesce(peaks.peak_bytes, estimates.estimated_bytes, builds.file_size_bytes) as held_bytes
    from {{ ref('dim_model_build') }} as builds
    left join peaks on peaks.build_id = builds.build_id
    left join estimates on estimates.build_id = builds.build_id
),

counted as (
    select model_id, build_id, is_measured, held_bytes, needed_bytes
    from (
        select
            sized.*,
            cast(ceil(held_bytes * 1.2) as bigint) as needed_bytes,
            bool_or(is_measured) over (partition by model_id) as has_measured_build
        from sized
        where held_bytes > 0
    ) as sized_builds
    where is_measured or not has_measured_build
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
        as n_kinds_holding
from fits

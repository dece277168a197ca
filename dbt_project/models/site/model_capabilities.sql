-- Reference page "proved by at least one build: Tool calling · ..." (model-page-llama-3.2-3b.txt):
-- one row per build x capability checked by signed or source runs, passed when any run of the
-- build passed it, with the name a page prints (seed capabilities, else the check's own name
-- made readable) and on how many machines it was checked.
with checks as (
    select * from {{ ref('fct_capability_checks') }}
    where is_countable and not is_duplicate and build_id is not null
),

names as (
    select capability, display_name from {{ ref('capabilities') }}
),

capabilities as (
    select
        checks.model_id,
        checks.build_id,
        checks.capability,
        coalesce(
            any_value(names.display_name),
            upper(left(replace(checks.capability, '_', ' '), 1)) || substr(replace(checks.capability, '_', ' '), 2)
        ) as display_name,
        bool_or(checks.has_passed) as passed,
        cast(count(*) as bigint) as n_runs,
        cast(count(*) filter (where checks.has_passed) as bigint) as n_runs_passed,
        cast(count(distinct checks.machine_id) as bigint) as n_machines
    from checks
    left join names on names.capability = lower(checks.capability)
    group by checks.model_id, checks.build_id, checks.capability
)

-- the page's sentence lists each capability some build passed once: is_proof_listed marks that row
select
    capabilities.*,
    build.quant,
    build.quantizer,
    row_number() over (
        partition by capabilities.model_id, capabilities.capability
        order by capabilities.passed desc, capabilities.build_id asc
    ) = 1 and capabilities.passed as is_proof_listed
from capabilities
left join {{ ref('dim_model_build') }} as build on build.build_id = capabilities.build_id

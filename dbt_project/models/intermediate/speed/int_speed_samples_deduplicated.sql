-- The same run seen twice (paging overlap, a re-fetched page, the same file landed twice) keeps
-- one row per (source, source_run_id, sample_index). Only the samples of a key seen more than
-- once go through the keep-first window: over every wide row that window cost more than finding
-- those keys. The samples view is named in each branch, not through a CTE, so DuckDB does not
-- copy it. A view: int_speed_runs and fct_speed_measurements each read it once.
with repeated_keys as (
    select source, source_run_id, sample_index
    from {{ ref('int_speed_samples_resolved') }}
    group by source, source_run_id, sample_index
    having count(*) > 1
)

select s.*
from {{ ref('int_speed_samples_resolved') }} as s
where not exists (
    select 1 from repeated_keys as k
    where k.source is not distinct from s.source
        and k.source_run_id is not distinct from s.source_run_id
        and k.sample_index is not distinct from s.sample_index
)
union all
{% call keep_first('source, source_run_id, sample_index', 'measured_at, test_name, gen_tps, prompt_tps, ttft_ms') -%}
    select s.*
    from {{ ref('int_speed_samples_resolved') }} as s
    where exists (
        select 1 from repeated_keys as k
        where k.source is not distinct from s.source
            and k.source_run_id is not distinct from s.source_run_id
            and k.sample_index is not distinct from s.sample_index
    )
{%- endcall %}

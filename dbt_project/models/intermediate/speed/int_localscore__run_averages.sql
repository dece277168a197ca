-- LocalScore's own averages of each run (the latest landing of the run): what its pages print
-- as "LocalScore avg", which is not the median of the run's tests.
select
    'localscore' as source,
    cast(run_id as string) as source_run_id,
    avg_gen_tps,
    avg_prompt_tps,
    avg_ttft_ms,
    performance_score
from (
    {% call keep_first('run_id', 'fetched_at desc, raw_sha256 desc, record_index desc') -%}
        select * from {{ ref('stg_localscore__runs') }}
    {%- endcall %}
) as latest

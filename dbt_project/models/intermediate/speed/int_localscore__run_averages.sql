-- LocalScore's own averages of each run (the latest landing of the run): what its pages print
-- as "LocalScore avg", which is not the median of the run's tests.
select
    'localscore' as source,
    cast(run_id as varchar) as source_run_id,
    avg_gen_tps,
    avg_prompt_tps,
    avg_ttft_ms,
    performance_score
from {{ ref('stg_localscore__runs') }}
qualify row_number() over (
        partition by run_id order by fetched_at desc, raw_sha256 desc, record_index desc
    ) = 1

-- One row per run: a run landed from several payloads (the same tool output added twice
-- under other names, or with other sidecar facts) counts once. The first landing wins, so a
-- later file cannot rewrite a run already published.

with runs as (
    select * from {{ ref('stg_runs__runs') }}
),

ranked as (
    select
        runs.*,
        row_number() over (
            partition by runs.source, runs.source_run_id
            order by runs.landed_from_fetched_at, runs.raw_sha256, runs.record_index
        ) as landing_rank
    from runs
),

final as (
    select {{ star_except(['landing_rank']) }}
    from ranked
    where landing_rank = 1
)

select * from final

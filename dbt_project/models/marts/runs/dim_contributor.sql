-- People who contributed signed runs: name and key id only (nothing else about them is kept).
-- A key renamed in trusted_keys.json between two runs takes its latest name.

with runs as (
    select * from {{ ref('int_runs_deduplicated') }}
),

final as (
    select
        keyid,
        {{ arg_max("contributor", "landed_from_fetched_at") }} as contributor_name
    from runs
    where trust = 'signed' and keyid is not null
    group by keyid
)

select * from final

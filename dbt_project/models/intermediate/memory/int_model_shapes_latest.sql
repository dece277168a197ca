-- The latest config.json of each base-model repo: the numbers the KV-cache estimate needs.
with configs as (
    select
        *,
        row_number() over (partition by repo order by fetched_at desc, raw_sha256 asc) as recency
    from {{ ref('stg_huggingface__configs') }}
)

select
    repo,
    model_type,
    num_hidden_layers,
    num_attention_heads,
    num_key_value_heads,
    head_dim,
    is_head_dim_derived,
    max_position_embeddings as trained_context_tokens,
    sliding_window,
    fetched_at
from configs
where recency = 1

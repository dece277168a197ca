with source as (
    select * from {{ source('huggingface', 'configs') }}
),

renamed as (
    select
        cast(repo as string) as repo,
        cast(model_type as string) as model_type,
        cast(num_hidden_layers as integer) as num_hidden_layers,
        cast(num_attention_heads as integer) as num_attention_heads,
        cast(num_key_value_heads as integer) as num_key_value_heads,
        cast(head_dim as integer) as head_dim,
        cast(is_head_dim_derived as boolean) as is_head_dim_derived,
        cast(hidden_size as integer) as hidden_size,
        cast(max_position_embeddings as bigint) as max_position_embeddings,
        cast(sliding_window as bigint) as sliding_window,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as fetched_at
    from source
)

select * from renamed

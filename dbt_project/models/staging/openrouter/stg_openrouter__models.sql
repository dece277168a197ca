with source as (
    select * from {{ source('openrouter', 'models') }}
),

renamed as (
    select
        cast(openrouter_id as string) as openrouter_id,
        cast(canonical_slug as string) as canonical_slug,
        cast(name as string) as model_name,
        cast(hugging_face_id as string) as hugging_face_id,
        cast(created as timestamp) as created_at,
        cast(context_length as bigint) as context_length,
        cast(max_completion_tokens as bigint) as max_completion_tokens,
        cast(modality as string) as modality,
        cast(tokenizer as string) as tokenizer,
        cast(is_free_variant as boolean) as is_free_variant,
        -- landings from before the column existed had no "-1" rows (those were quarantined)
        cast(coalesce(has_fixed_price, true) as boolean) as has_fixed_price,
        cast(prompt_usd_per_mtok as double) as prompt_usd_per_mtok,
        cast(completion_usd_per_mtok as double) as completion_usd_per_mtok,
        cast(request_usd as double) as request_usd,
        cast(input_cache_read_usd_per_mtok as double) as input_cache_read_usd_per_mtok,
        cast(input_cache_write_usd_per_mtok as double) as input_cache_write_usd_per_mtok,
        cast(pricing_json as string) as pricing_json,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as fetched_at,
        cast(_record_index as bigint) as record_index
    from source
)

select * from renamed

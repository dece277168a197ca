with source as (
    select * from {{ source('huggingface', 'model_infos') }}
),

renamed as (
    select
        cast(repo as string) as repo,
        cast(base_model as string) as base_model,
        cast(base_models as string) as base_models,
        cast(base_model_relation as string) as base_model_relation,
        cast(license as string) as license,
        cast(pipeline_tag as string) as pipeline_tag,
        cast(library_name as string) as library_name,
        cast(tags as string) as tags,
        cast(architectures as string) as architectures,
        cast(model_type as string) as model_type,
        cast(safetensors_params as bigint) as safetensors_params,
        cast(gguf_params as bigint) as gguf_params,
        cast(gguf_architecture as string) as gguf_architecture,
        cast(gguf_context_length as bigint) as gguf_context_length,
        cast(is_gated as boolean) as is_gated,
        cast(_raw_sha256 as string) as raw_sha256,
        cast(_fetched_at as timestamp) as fetched_at
    from source
)

select * from renamed

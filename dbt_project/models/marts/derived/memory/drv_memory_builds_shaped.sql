-- One row per model build with what the memory estimate needs: the weights (the build's GGUF
-- file size, split parts summed, from marts.dim_model_build) and the base model's shape (its
-- config.json, found through the catalogue's hf_base_repo). A build whose source names no file
-- (LocalScore's "Q6_K") weighs its parameters x the quant's bits per weight / 8, said by
-- weights_basis = 'parameters' (memory and fits-on use it; expected speed keeps to files).
with builds as (
    select
        builds.build_id, builds.model_id, builds.quant, builds.file_name, builds.hf_repo, builds.quantizer,
        case
            when builds.file_size_bytes > 0 then builds.file_size_bytes
            else cast(models.params_b * 1e9 * quants.bits_per_weight / 8 as bigint)
        end as file_size_bytes,
        case when builds.file_size_bytes > 0 then 'file' else 'parameters' end as weights_basis
    from {{ ref('dim_model_build') }} as builds
    left join {{ ref('dim_model') }} as models on models.model_id = builds.model_id
    left join {{ ref('quantizations') }} as quants on quants.quant = builds.quant
    where builds.file_size_bytes > 0
        or (builds.file_name is null and models.params_b > 0 and quants.bits_per_weight > 0)
),

shapes as (
    select catalogue.model_id, shapes.*
    from {{ ref('model_catalogue') }} as catalogue
    inner join {{ ref('int_model_shapes_latest') }} as shapes
        on lower(shapes.repo) = lower(catalogue.hf_base_repo)
    union all
    -- models resolved through the Hub that the catalogue does not hold: their own config.json,
    -- else their base model's (intermediate/resolution/int_hub_models_resolved)
    select hub.model_id, shapes.*
    from (
        select model_id, any_value(config_repo) as config_repo
        from {{ ref('int_hub_models_resolved') }}
        where not is_catalogued and config_repo is not null
        group by model_id
    ) as hub
    inner join {{ ref('int_model_shapes_latest') }} as shapes on lower(shapes.repo) = lower(hub.config_repo)
)

select
    builds.build_id,
    builds.model_id,
    builds.quant,
    builds.file_name,
    builds.hf_repo,
    builds.quantizer as packager,
    builds.file_size_bytes as weights_bytes,
    builds.weights_basis,
    shapes.repo as config_repo,
    shapes.num_hidden_layers,
    shapes.num_key_value_heads,
    shapes.head_dim,
    shapes.trained_context_tokens,
    shapes.sliding_window
from builds
inner join shapes on shapes.model_id = builds.model_id

-- Memory a build needs per context size, by DESIGN §7:
--   weights = GGUF file size
--   KV cache(ctx) = 2 (K and V) x n_layer x ctx x n_kv_heads x head_dim x bytes per element
--   + compute buffer + runtime overhead (dbt vars, documented in docs/facts.md)
-- Sliding-window layers (Gemma) are counted at full context: an upper bound, flagged.
{% set contexts = var('memory_context_tokens') %}
{% set default_context = var('default_context_tokens') %}

with builds as (
    select * from {{ ref('drv_memory_builds_shaped') }}
),

contexts as (
    select cast(context_tokens as bigint) as context_tokens
    from (
        values
        {%- for c in (contexts + [default_context]) | unique %}
            ({{ c }}){{ "," if not loop.last }}
        {%- endfor %}
    ) as tabulated (context_tokens)
),

sized as (
    select
        builds.*,
        contexts.context_tokens
    from builds
    inner join contexts
        -- tabulate up to the trained context; the default context is always kept
        on contexts.context_tokens <= builds.trained_context_tokens
        or contexts.context_tokens = {{ default_context }}
)

select
    build_id,
    context_tokens,
    weights_bytes,
    weights_basis,
    cast(
        2 * num_hidden_layers * context_tokens * num_key_value_heads * head_dim
        * {{ var('memory_kv_bytes_per_element') }} as bigint
    ) as kv_cache_bytes,
    cast({{ var('memory_compute_buffer_bytes') }} as bigint) as compute_buffer_bytes,
    cast({{ var('memory_runtime_overhead_bytes') }} as bigint) as runtime_overhead_bytes,
    cast({{ var('memory_compute_buffer_bytes') }} + {{ var('memory_runtime_overhead_bytes') }} as bigint)
        as overhead_bytes,
    weights_bytes
    + cast(
        2 * num_hidden_layers * context_tokens * num_key_value_heads * head_dim
        * {{ var('memory_kv_bytes_per_element') }} as bigint
    )
    + {{ var('memory_compute_buffer_bytes') }} + {{ var('memory_runtime_overhead_bytes') }}
        as estimated_bytes,
    context_tokens = {{ default_context }} as is_default_context,
    context_tokens > trained_context_tokens as is_beyond_trained_context,
    coalesce(sliding_window < context_tokens, false) as is_kv_upper_bound,
    trained_context_tokens,
    num_hidden_layers,
    num_key_value_heads,
    head_dim
from sized

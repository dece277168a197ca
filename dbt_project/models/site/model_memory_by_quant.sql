-- A model's memory per quantization at the default context: file size, estimated need, the
-- smallest catalogue card that holds it, and the measured peak where runs report one.
select
    memory.build_id,
    memory.model_id,
    model.name as model_name,
    memory.quant,
    build.bits_per_weight,
    memory.file_name,
    memory.packager,
    memory.weights_bytes as file_size_bytes,
    memory.context_tokens,
    memory.kv_cache_bytes,
    memory.overhead_bytes,
    memory.estimated_bytes,
    memory.estimated_gb,
    memory.is_kv_upper_bound,
    memory.smallest_card_hardware_id,
    memory.smallest_card_name,
    memory.smallest_card_memory_gb,
    memory.measured_peak_bytes,
    memory.estimate_error_pct
from {{ ref('fct_memory_requirements') }} as memory
left join {{ ref('dim_model') }} as model on model.model_id = memory.model_id
left join {{ ref('dim_model_build') }} as build on build.build_id = memory.build_id
where memory.is_default_context
